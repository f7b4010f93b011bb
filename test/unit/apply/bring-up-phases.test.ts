/**
 * `up`'s phases on the GPU side (apply/bring-up.ts) as a caller runs them, and container/launch-session.ts's
 * upBeside, which runs them with the container's preparation beside: out of order or after a failure a phase is
 * refused, a session left recorded is undone by end(), its lifetime counts from when it is recorded, and a missing
 * image or a failed preparation leaves the GPU, the books and the name as they were. Over the nvidia-smi simulator.
 */
import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {listSessions} from '../../../src/apply/book-store.js'
import {beginUp, bringUp} from '../../../src/apply/bring-up.js'
import {readClaims} from '../../../src/apply/session-names.js'
import {upBeside} from '../../../src/container/launch-session.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'
import {cleanupTemps} from '../../cli/support/run-cli.js'
import {ALICE, gpuPicture, simBox, upRequest} from './sim-deps.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

/** the simulator's calls that change a GPU (anything but a read) */
const changes = (box: ReturnType<typeof simBox>) =>
  box.sim.calls().filter((c) => /(-pm|-mig|-cgi|-dgi|-lgc|-rgc|-pl)\b/.test(c.argv.join(' ')) && !/-lgip|-lgi\b|-lci/.test(c.argv.join(' ')))

describe("bring-up's phases", () => {
  it('refuse to run out of order, and end() undoes a session left recorded: GPU as found, no record, the name free', async () => {
    const box = simBox()
    const before = gpuPicture(box.sim)
    const up = await beginUp(upRequest(ALICE, {name: 'phased'}), box.deps)
    await up.read()
    await up.plan()
    await up.record()
    box.sim.clearCalls()
    await up.makeDevices()
    // what `changes` counts is what a session's steps do (the upBeside cases below expect none)
    expect(changes(box).map((c) => c.argv.join(' '))).toEqual(expect.arrayContaining([expect.stringMatching(/-cgi/)]))
    // the GPU-wide settings were skipped: no commit
    expect(() => up.activate()).toThrow(/at gpu-wide ran at devices/)
    expect(listSessions(box.stateDir, SANDBOX).map((l) => l.session.phase)).toEqual(['starting'])
    await up.end()
    expect(listSessions(box.stateDir, SANDBOX)).toEqual([])
    expect(gpuPicture(box.sim)).toEqual(before)
    expect(readClaims(box.stateDir, SANDBOX).map((c) => c.name)).not.toContain('phased')
    // the lock was let go of: the next up comes up at once
    await expect(bringUp(upRequest(ALICE, {name: 'next'}), box.deps)).resolves.toMatchObject({name: 'next'})
  })

  it('refuse every phase after one failed; undo and end still put everything back', async () => {
    const box = simBox()
    const before = gpuPicture(box.sim)
    const up = await beginUp(upRequest(ALICE, {name: 'failing'}), box.deps)
    await up.read()
    await up.plan()
    await up.record()
    box.sim.failNext({match: '-cgi'})
    const failure = await up.makeDevices().catch((e: unknown) => e)
    expect(failure).toBeInstanceOf(Error)
    await expect(up.setGpuWide()).rejects.toThrow(/after a failure/)
    expect(() => up.activate()).toThrow(/after a failure/)
    await up.undo(failure)
    await up.end()
    expect(listSessions(box.stateDir, SANDBOX)).toEqual([])
    expect(gpuPicture(box.sim)).toEqual(before)
  })

  it('count the lifetime from when the session is recorded, not from its planning', async () => {
    const box = simBox()
    const up = await beginUp(upRequest(ALICE, {ttlMs: 60_000}), box.deps)
    try {
      await up.read()
      await up.plan()
      // what up does between planning and recording (Docker, the image, the key) may take seconds
      await new Promise((resolve) => setTimeout(resolve, 300))
      const recordedFrom = Date.now()
      await up.record()
      expect(Date.parse(up.session.createdAt)).toBeGreaterThanOrEqual(recordedFrom)
      expect(Date.parse(up.session.expiresAt!)).toBe(Date.parse(up.session.createdAt) + 60_000)
    } finally {
      await up.end()
    }
  })
})

describe('upBeside (up with a container)', () => {
  it('a missing image ends the try before any change: no GPU change, no record, the name and the lock free', async () => {
    const box = simBox()
    const before = gpuPicture(box.sim)
    box.sim.clearCalls()
    await expect(upBeside(async () => 'build-needed', upRequest(ALICE, {name: 'imageless'}), box.deps)).resolves.toBe('build-needed')
    expect(changes(box)).toEqual([])
    expect(gpuPicture(box.sim)).toEqual(before)
    expect(listSessions(box.stateDir, SANDBOX)).toEqual([])
    expect(readClaims(box.stateDir, SANDBOX).map((c) => c.name)).not.toContain('imageless')
    await expect(bringUp(upRequest(ALICE, {name: 'imageless'}), box.deps)).resolves.toMatchObject({name: 'imageless'})
  })

  it('a preparation that fails (Docker down) fails the up after planning, with nothing changed', async () => {
    const box = simBox()
    box.sim.clearCalls()
    const dockerDown = Object.assign(new Error('Docker does not answer'), {code: 'DOCKER_UNAVAILABLE'})
    await expect(upBeside(async () => Promise.reject(dockerDown), upRequest(ALICE, {name: 'dockerless'}), box.deps)).rejects.toBe(dockerDown)
    expect(changes(box)).toEqual([])
    expect(listSessions(box.stateDir, SANDBOX)).toEqual([])
    expect(readClaims(box.stateDir, SANDBOX).map((c) => c.name)).not.toContain('dockerless')
  })

  it('prepares nothing for a name that is taken', async () => {
    const box = simBox()
    await bringUp(upRequest(ALICE, {name: 'taken'}), box.deps)
    let prepared = 0
    const prepare = async () => {
      prepared++
      return 'build-needed' as const
    }
    await expect(upBeside(prepare, upRequest(ALICE, {name: 'taken'}), box.deps)).rejects.toMatchObject({code: 'SESSION_EXISTS'})
    expect(prepared).toBe(0)
  })
})
