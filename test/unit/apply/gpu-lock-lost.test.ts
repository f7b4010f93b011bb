/**
 * Issue 27: a holder paused inside a GPU's lock (Ctrl-Z, a pipe it blocks on) past the stale time has its lock taken
 * over by a teammate's command; when it resumes, it must not write its stale copy of the book over the teammate's
 * change. Here the holder is a withBook in this process held at a gate (as if stopped), its lock made stale as a pause
 * leaves it (not refreshed for over 4 s), and a second handle, a member's `up`, takes the lock over.
 */
import {existsSync, utimesSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {listSessions, type OpenBook, withBook} from '../../../src/apply/book-store.js'
import {bringUp} from '../../../src/apply/bring-up.js'
import {cleanupTemps} from '../../cli/support/run-cli.js'
import {target} from '../plan/catalog-for-tests.js'
import {BOB, bringUpPausing, simBox, upRequest} from './sim-deps.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

/** A holder inside the lock, stopped at a gate: `resume` lets it write its book (persist) and leave. */
async function pausedHolder(box: ReturnType<typeof simBox>) {
  const gpu = (await box.deps.gpu.listGpus()).gpus[0]
  let entered!: () => void
  const inside = new Promise<void>((resolve) => (entered = resolve))
  let resume!: () => void
  const gate = new Promise<void>((resolve) => (resume = resolve))
  const done = withBook(box.deps, gpu, async (open: OpenBook) => {
    entered()
    await gate
    open.persist()
  })
  done.catch(() => undefined)
  await inside
  const lockDir = join(box.stateDir, 'gpus', `${gpu.uuid}.lock`)
  // what a pause leaves: nobody refreshed the lock's mtime for over the stale time (4 s)
  const past = new Date(Date.now() - 10_000)
  utimesSync(lockDir, past, past)
  return {done, resume, lockDir}
}

describe('a process that lost its GPU lock', () => {
  it('writes no book when it resumes: GPU_LOCK_LOST, and the session the new holder recorded survives', async () => {
    const box = simBox()
    const stale = await pausedHolder(box)
    const up = await bringUp(upRequest(BOB, {target: target('1650'), name: 'bobs'}), box.deps)
    expect(up.name).toBe('bobs')
    stale.resume()
    await expect(stale.done).rejects.toMatchObject({code: 'GPU_LOCK_LOST', exit: 3})
    expect(listSessions(box.stateDir, SANDBOX).map((l) => l.session.name)).toEqual(['bobs'])
  })

  it('leaves the new holder’s lock in place when it resumes while the new holder is inside', async () => {
    const box = simBox()
    const stale = await pausedHolder(box)
    let lockWhileInside: boolean | null = null
    // inside the new holder's lock: the stale holder resumes, fails, and must not release what is not its lock
    const up = await bringUpPausing(upRequest(BOB, {target: target('1650'), name: 'bobs'}), box.deps, async () => {
      stale.resume()
      await stale.done.catch(() => undefined)
      lockWhileInside = existsSync(stale.lockDir)
    })
    await expect(stale.done).rejects.toMatchObject({code: 'GPU_LOCK_LOST', exit: 3})
    expect(lockWhileInside).toBe(true)
    expect(up.name).toBe('bobs')
    expect(listSessions(box.stateDir, SANDBOX).map((l) => l.session.name)).toEqual(['bobs'])
  })
})
