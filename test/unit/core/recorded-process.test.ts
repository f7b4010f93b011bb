import os from 'node:os'

import {diedOnThisHost, startTicksOf, thisProcess} from '../../../src/core/recorded-process.js'

describe('diedOnThisHost: the one liveness test', () => {
  test('this process, as recorded, is alive; with another start time it is a reused pid, so dead', () => {
    const me = thisProcess()
    expect(me.startTicks).toBe(startTicksOf(process.pid))
    expect(diedOnThisHost(me)).toBe(false)
    expect(diedOnThisHost({pid: me.pid, hostname: me.hostname})).toBe(false)
    if (me.startTicks !== null) expect(diedOnThisHost({...me, startTicks: `${me.startTicks}0`})).toBe(true)
  })

  test('a free pid on this host is dead; any process of another host is never judged from here', () => {
    const free = 2 ** 22 + 1 // above pid_max's ceiling
    expect(diedOnThisHost({pid: free, hostname: os.hostname()})).toBe(true)
    expect(diedOnThisHost({pid: free, hostname: `${os.hostname()}-elsewhere`})).toBe(false)
  })
})
