/**
 * Issue 20, up --wait: requests wait in the box's queue when no slice is free, are served fairly between users as
 * slices free, leave it on abort or timeout having changed nothing, and a waiter killed -9 leaves no trace.
 */
import {spawn} from 'node:child_process'
import {existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {bringUp} from '../../../src/apply/bring-up.js'
import {listSessions} from '../../../src/apply/book-store.js'
import {fairOrder, listQueue, waitInQueue, type QueueEntry} from '../../../src/apply/wait-queue.js'
import {queueDir} from '../../../src/core/state-layout.js'
import {startTicksOf} from '../../../src/core/recorded-process.js'
import {cleanupTemps} from '../../cli/support/run-cli.js'
import {target} from '../plan/catalog-for-tests.js'
import {ALICE, BOB, gpuPicture, simBox, upRequest} from './sim-deps.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

jest.setTimeout(90_000)
afterAll(cleanupTemps)

const entry = (id: string, uid: number, at: number): QueueEntry => ({
  version: 1,
  id,
  uid,
  user: `u${uid}`,
  want: 'x',
  pid: 1,
  hostname: 'h',
  startTicks: null,
  bootId: null,
  enqueuedAt: new Date(at).toISOString(),
})

/** Every 1g slice of GPU 0 taken (one by root's session, six by an admin outside gpu-cosplay), so ups must wait. */
async function fullBox() {
  const box = simBox()
  await bringUp(upRequest({uid: 0, user: 'root'}, {target: target('1650'), name: 'root-first'}), box.deps)
  box.sim.createInstances(0, [19, 19, 19, 19, 19, 19])
  return box
}
const freeOneSlice = (box: ReturnType<typeof simBox>, gi: number) => {
  box.sim.smi(['mig', '-i', '0', '-gi', String(gi), '-ci', '0', '-dci'])
  box.sim.smi(['mig', '-i', '0', '-dgi', '-gi', String(gi)])
  // a slice freed by a down changes a book; the admin's does not, so touch the GPU's as a down would
  const books = join(box.stateDir, 'gpus')
  for (const name of readdirSync(books).filter((f) => f.endsWith('.json'))) utimesSync(join(books, name), new Date(), new Date())
}

describe('the queue', () => {
  it('is round-robin by user: one user’s later requests never go before another’s first', () => {
    const order = fairOrder([entry('a1', 1, 1), entry('a2', 1, 2), entry('a3', 1, 3), entry('b1', 2, 4), entry('c1', 3, 5), entry('b2', 2, 6)])
    expect(order.map((e) => e.id)).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3'])
    // a user who holds a session already waits behind those who hold none
    expect(fairOrder([entry('a2', 1, 1), entry('b1', 2, 2)], new Map([[1, 1]])).map((e) => e.id)).toEqual(['b1', 'a2'])
  })

  it('serves two users’ waiting requests in fair order as slices free', async () => {
    const box = await fullBox()
    const mine = listSessions(box.stateDir, SANDBOX)[0].session.mig!.gpuInstanceId
    const gis = (box.sim.state().gpus[0].gis.map((g: {id: number}) => g.id) as number[]).filter((id) => id !== mine)
    const served: string[] = []
    let inFlight = 0
    let servedAt = 0
    const positions: string[] = []
    const wait = (label: string, owner: typeof ALICE) =>
      waitInQueue(box.stateDir, {
        trust: SANDBOX,
        who: owner,
        want: `1650 (${label})`,
        name: label,
        target: '1650',
        pollMs: 50,
        attempt: async () => {
          inFlight++
          try {
            const up = await bringUp(upRequest(owner, {target: target('1650'), name: label}), box.deps)
            served.push(label)
            servedAt = Date.now()
            return up
          } finally {
            inFlight--
          }
        },
        onProgress: (p) => positions.push(`${label}:${p.position}/${p.waiting}`),
      })
    const a1 = wait('a1', ALICE)
    await new Promise((r) => setTimeout(r, 300))
    const a2 = wait('a2', ALICE)
    await new Promise((r) => setTimeout(r, 300))
    const b1 = wait('b1', BOB)
    // all three queued (a member's request is counted under the queue's lock first) and each has tried once
    while (listQueue(box.stateDir, SANDBOX).length < 3 || listQueue(box.stateDir, SANDBOX).some((e) => e.missedAt === undefined))
      await new Promise((r) => setTimeout(r, 20))
    expect(listQueue(box.stateDir, SANDBOX).map((e) => e.want)).toEqual(['1650 (a1)', '1650 (b1)', '1650 (a2)'])
    // a slice frees while every waiter has seen the GPU full since the last change (none is mid-try: one that is may take
    // a slice freed during its try, whatever its place)
    const settled = () => inFlight === 0 && listQueue(box.stateDir, SANDBOX).every((e) => e.missedAt !== undefined && Date.parse(e.missedAt) > servedAt)
    for (const gi of gis.slice(0, 3)) {
      const before = served.length
      while (!settled()) await new Promise((r) => setTimeout(r, 20))
      freeOneSlice(box, gi)
      while (served.length === before) await new Promise((r) => setTimeout(r, 50))
    }
    await Promise.all([a1, a2, b1])
    expect(served).toEqual(['a1', 'b1', 'a2'])
    expect(positions).toContain('b1:2/3')
    expect(listQueue(box.stateDir, SANDBOX)).toEqual([])
    expect(readdirSync(queueDir(box.stateDir))).toEqual([])
  })

  it('abort and timeout leave the queue and change nothing', async () => {
    const box = await fullBox()
    const picture = gpuPicture(box.sim)
    const attempt = () => bringUp(upRequest(ALICE, {target: target('1650')}), box.deps)
    const abort = new AbortController()
    const waiting = waitInQueue(box.stateDir, {trust: SANDBOX, who: ALICE, want: '1650', name: null, target: '1650', attempt, pollMs: 50, signal: abort.signal})
    while (listQueue(box.stateDir, SANDBOX).length === 0) await new Promise((r) => setTimeout(r, 20))
    abort.abort()
    await expect(waiting).rejects.toMatchObject({code: 'QUEUE_LEFT'})
    await expect(
      waitInQueue(box.stateDir, {trust: SANDBOX, who: ALICE, want: '1650', name: null, target: '1650', attempt, pollMs: 50, timeoutMs: 500}),
    ).rejects.toMatchObject({
      code: 'QUEUE_TIMEOUT',
    })
    expect(listQueue(box.stateDir, SANDBOX)).toEqual([])
    expect(readdirSync(queueDir(box.stateDir))).toEqual([])
    expect(listSessions(box.stateDir, SANDBOX).map((l) => l.session.name)).toEqual(['root-first'])
    expect(readdirSync(join(box.stateDir, 'sessions'))).toEqual(['root-first.json'])
    expect(gpuPicture(box.sim)).toEqual(picture)
  })

  it('a waiter killed -9 leaves no trace: the next reader ignores and removes its entry', async () => {
    const box = simBox()
    const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], {stdio: 'ignore'})
    await new Promise((r) => setTimeout(r, 100))
    const dir = queueDir(box.stateDir)
    mkdirSync(dir, {recursive: true})
    const file = join(dir, 'dead.json')
    writeFileSync(
      file,
      JSON.stringify({
        ...entry('dead', ALICE.uid, Date.now()),
        pid: child.pid,
        hostname: (await import('node:os')).hostname(),
        startTicks: startTicksOf(child.pid!),
      }),
    )
    expect(listQueue(box.stateDir, SANDBOX).map((e) => e.id)).toEqual(['dead'])
    child.kill('SIGKILL')
    await new Promise((r) => child.on('exit', r))
    expect(listQueue(box.stateDir, SANDBOX)).toEqual([])
    expect(existsSync(file)).toBe(false)
  })
})
