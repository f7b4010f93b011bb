import {chownSync, mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {enginesOf} from '../../../src/engine/engines-of-caller.js'

describe('enginesOf', () => {
  let proc: string
  beforeEach(() => (proc = mkdtempSync(join(tmpdir(), 'gc-proc-'))))
  afterEach(() => rmSync(proc, {recursive: true, force: true}))

  const process_ = (pid: number, argv: string[], env: string[]) => {
    mkdirSync(join(proc, String(pid)))
    writeFileSync(join(proc, String(pid), 'cmdline'), `${argv.join('\0')}\0`)
    writeFileSync(join(proc, String(pid), 'environ'), `${env.join('\0')}\0`)
  }
  const ENGINE = '/usr/lib/node_modules/gpu-cosplay/dist/engine.js'

  it("counts the caller's other engines only: not another member's, not other programs, not itself", () => {
    process_(10, ['/usr/bin/node', ENGINE], ['PATH=/bin', 'SUDO_UID=1302'])
    process_(11, ['/usr/bin/node', ENGINE], ['SUDO_UID=1302'])
    process_(12, ['/usr/bin/node', ENGINE], ['SUDO_UID=1301'])
    process_(13, ['/usr/bin/node', '/home/b/engine.js'], ['SUDO_UID=1302'])
    process_(14, ['/usr/bin/node', ENGINE], ['SUDO_UID=13020'])
    // a member's own process dressed as an engine of someone else's does not count against them
    process_(15, ['/usr/bin/node', ENGINE], ['SUDO_UID=1301'])
    chownSync(join(proc, '15'), 1302, 1302)
    mkdirSync(join(proc, 'self'))
    expect(enginesOf(1302, ENGINE, 11, proc)).toBe(1)
    expect(enginesOf(1302, ENGINE, 99, proc)).toBe(2)
    expect(enginesOf(1301, ENGINE, 99, proc)).toBe(1)
    expect(enginesOf(4242, ENGINE, 99, proc)).toBe(0)
  })
})
