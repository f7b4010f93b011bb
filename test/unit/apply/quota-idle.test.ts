/**
 * Issue 20: quotas refuse cleanly before any change, across GPUs and under concurrency; idle reclaim ends a session
 * nobody uses (after a warning) and leaves a busy one. Over the nvidia-smi simulator.
 */
import {mkdirSync, readdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {bringUp} from '../../../src/apply/bring-up.js'
import {listSessions, scanBooks} from '../../../src/apply/book-store.js'
import {isSessionPart} from '../../../src/apply/gpu-book.js'
import {reapSessions} from '../../../src/apply/reap.js'
import {idleSessions} from '../../../src/apply/session-clock.js'
import {NO_POLICY, quotaFor, sessionPolicyOf} from '../../../src/apply/session-policy.js'
import {cleanupTemps} from '../../cli/support/run-cli.js'
import {MUTATING} from '../../cli/support/run-cli-async.js'
import {target} from '../plan/catalog-for-tests.js'
import {ALICE, BOB, bringUpPausing, gpuPicture, simBox, upRequest} from './sim-deps.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

const mutations = (box: ReturnType<typeof simBox>) => box.sim.calls().filter((c) => MUTATING.test(c.argv.join(' ')))

describe('quotas', () => {
  it('are resolved per user, then group (most generous), then the box; root has none', () => {
    const config = {quotas: {sessions: 1, slices: 2, groups: {ml: {sessions: 3}, ops: {sessions: 2, slices: 8}}, users: {carol: {sessions: null}}}}
    expect(quotaFor({user: 'alice', isRoot: false}, config, [])).toEqual({sessions: 1, slices: 2, source: "the box's quota"})
    expect(quotaFor({user: 'bob', isRoot: false}, config, ['ml', 'ops'])).toEqual({sessions: 3, slices: 8, source: "group ml/ops's quota"})
    expect(quotaFor({user: 'carol', isRoot: false}, config, ['ml'])).toEqual({sessions: null, slices: 2, source: "carol's quota"})
    expect(quotaFor({user: 'root', isRoot: true}, config, [])).toBeNull()
    expect(quotaFor({user: 'alice', isRoot: false}, {}, [])).toBeNull()
  })

  it('a session over the quota is refused (exit 4) before anything changes, naming the quota and what is held', async () => {
    const box = simBox()
    const quota = {sessions: 1, slices: null, source: "the box's quota"}
    await bringUp(upRequest(ALICE, {quota}), box.deps)
    const picture = gpuPicture(box.sim)
    const changes = mutations(box).length
    const refused = await bringUp(upRequest(ALICE, {quota}), box.deps).catch((e: unknown) => e)
    expect(refused).toMatchObject({code: 'QUOTA_EXCEEDED', exit: 4})
    expect((refused as Error).message).toMatch(/the box's quota is 1 session.*you hold 1 session/)
    expect(mutations(box)).toHaveLength(changes)
    expect(gpuPicture(box.sim)).toEqual(picture)
    expect(readdirSync(join(box.stateDir, 'sessions'))).toHaveLength(1) // no name claim left behind
    // another user is not counted against alice's, and root holds none
    await bringUp(upRequest(BOB, {quota}), box.deps)
    expect(listSessions(box.stateDir, SANDBOX)).toHaveLength(2)
  })

  it('counts memory slices across GPUs', async () => {
    const box = simBox(2)
    const first = await bringUp(upRequest(ALICE, {target: target('3090')}), box.deps)
    const slices = first.plan.mig!.memorySlices
    const quota = {sessions: null, slices, source: "alice's quota"}
    await expect(bringUp(upRequest(ALICE, {quota, hostGpu: 1}), box.deps)).rejects.toMatchObject({code: 'QUOTA_EXCEEDED', exit: 4})
    await bringUp(upRequest(ALICE, {quota: {...quota, slices: slices * 2}, hostGpu: 1}), box.deps)
    expect(listSessions(box.stateDir, SANDBOX)).toHaveLength(2)
  })

  it("up --count 2 is one session holding two sessions' slices", async () => {
    const box = simBox(2)
    const one = await bringUp(upRequest(ALICE, {target: target('3090')}), box.deps)
    const slices = one.plan.mig!.memorySlices
    // one session of two devices fits a quota of one session and the slices of two
    const quota = {sessions: 3, slices: 3 * slices, source: "alice's quota"}
    const duo = await bringUp(upRequest(ALICE, {target: target('3090'), count: 2, quota}), box.deps)
    expect(duo.session.moreSlices).toHaveLength(1)
    const picture = gpuPicture(box.sim, 1)
    const changes = mutations(box).length
    // three slices are held in two sessions: another session of two would hold five, and is refused before any change
    const refused = await bringUp(upRequest(ALICE, {target: target('3090'), count: 2, quota, hostGpu: 1}), box.deps).catch((e: unknown) => e)
    expect(refused).toMatchObject({code: 'QUOTA_EXCEEDED', exit: 4})
    expect((refused as Error).message).toContain(`you hold 2 session(s) with ${3 * slices} memory slice(s)`)
    expect(mutations(box)).toHaveLength(changes)
    expect(gpuPicture(box.sim, 1)).toEqual(picture)
    // within the quota it is taken
    await bringUp(upRequest(ALICE, {target: target('3090'), count: 2, quota: {...quota, slices: 5 * slices}, hostGpu: 1}), box.deps)
  })

  it("up --count N spread over two GPUs is one session holding N sessions' slices, counted once", async () => {
    const box = simBox(2)
    const quota = {sessions: 1, slices: 16, source: "alice's quota"}
    const quad = await bringUp(upRequest(ALICE, {target: target('a6000'), count: 4, hostGpu: null, quota}), box.deps)
    expect(quad.plan.ranks!.gpus.map((g) => g.ranks)).toEqual([2, 2])
    expect(quad.parts).toHaveLength(1)
    // a record on each GPU, one session: four 3g slices of four memory slices each
    expect(listSessions(box.stateDir, SANDBOX)).toHaveLength(2)
    const refused = await bringUp(upRequest(ALICE, {target: target('t4'), quota, hostGpu: 1}), box.deps).catch((e: unknown) => e)
    expect(refused).toMatchObject({code: 'QUOTA_EXCEEDED'})
    expect((refused as Error).message).toContain('you hold 1 session(s) with 16 memory slice(s)')
  })

  it('a session recorded on a GPU a spread up let go of counts against that spread up’s quota', async () => {
    const box = simBox(3)
    const quota = {sessions: 1, slices: null, source: "the box's quota"}
    let solo: Promise<unknown> | undefined
    // while the spread up prepares (after it let go of GPU 2), the same user takes a session on GPU 2
    const meanwhile = async () => {
      solo ??= bringUp(upRequest(ALICE, {target: target('t4'), hostGpu: 2, quota, name: 'solo'}), box.deps)
      await solo.catch(() => undefined)
    }
    const quad = bringUpPausing(upRequest(ALICE, {target: target('a6000'), count: 4, hostGpu: null, quota, name: 'quad'}), box.deps, meanwhile)
    await expect(quad).rejects.toMatchObject({code: 'QUOTA_EXCEEDED'})
    await solo
    const held = listSessions(box.stateDir, SANDBOX).filter((l) => !isSessionPart(l.session))
    expect(held.map((l) => l.session.name)).toEqual(['solo'])
  })

  it('two concurrent ups on two GPUs cannot both take the last place', async () => {
    const box = simBox(2)
    const quota = {sessions: 1, slices: null, source: "the box's quota"}
    const results = await Promise.allSettled([
      bringUp(upRequest(ALICE, {quota, hostGpu: 0}), box.deps),
      bringUp(upRequest(ALICE, {quota, hostGpu: 1}), box.deps),
    ])
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
    expect(results.find((r) => r.status === 'rejected')).toMatchObject({reason: {code: 'QUOTA_EXCEEDED'}})
    expect(listSessions(box.stateDir, SANDBOX)).toHaveLength(1)
  })
})

describe('idle reclaim', () => {
  const policy = sessionPolicyOf({idleReclaim: '10s'})

  it('warns, then ends a session nobody uses, and leaves one whose slice computes', async () => {
    const box = simBox()
    const before = gpuPicture(box.sim)
    const idle = await bringUp(upRequest(ALICE), box.deps)
    const busy = await bringUp(upRequest(BOB), box.deps)
    box.sim.set('gpus.0.processes', [
      {pid: 4242, name: 'python3', used_mib: 900, type: 'C', gi: busy.session.mig!.gpuInstanceId, ci: 0},
      // an MPS server is not use of its own
      {pid: 4343, name: 'nvidia-cuda-mps-server', used_mib: 30, type: 'C', gi: idle.session.mig!.gpuInstanceId, ci: 0},
    ])
    const start = Math.max(Date.parse(idle.session.createdAt), Date.parse(busy.session.createdAt))
    const told: string[] = []
    const reap = (ms: number) => reapSessions({...box.deps, policy, notify: async (s, m) => void told.push(`${s.name}: ${m}`), now: () => start + ms})

    expect((await reap(5_000)).actions).toEqual([])
    const warned = await reap(8_500) // the lead: a fifth of 10 s
    expect(warned.actions).toMatchObject([{name: idle.name, action: 'warned', reason: 'idle'}])
    expect(told).toEqual([expect.stringContaining(`${idle.name}: gpu-cosplay: session ${idle.name} ends in`)])
    expect(idleSessions(box.stateDir, SANDBOX, policy, start + 8_500).map((s) => s.name)).toEqual([idle.name])

    // (the session's MPS server goes with its container; here it has none, and the simulator refuses -dci under a process)
    box.sim.set('gpus.0.processes', [{pid: 4242, name: 'python3', used_mib: 900, type: 'C', gi: busy.session.mig!.gpuInstanceId, ci: 0}])
    const ended = await reap(10_500)
    expect(ended.actions).toMatchObject([{name: idle.name, action: 'ended', reason: 'idle'}])
    expect(listSessions(box.stateDir, SANDBOX).map((l) => l.session.name)).toEqual([busy.name])
    expect(listSessions(box.stateDir, SANDBOX)[0].session.activeAt).toBeDefined()

    box.sim.set('gpus.0.processes', [])
    expect(await reapSessions({...box.deps, policy, now: () => start + 60_000}).then((r) => r.actions.map((a) => a.action))).toEqual(['warned']) // warned first even when found idle past its time
    await reapSessions({...box.deps, policy, now: () => start + 63_000})
    expect(listSessions(box.stateDir, SANDBOX)).toEqual([])
    expect(gpuPicture(box.sim)).toEqual(before)
  })

  it('a session spread over two GPUs is in use when it computes on either: only one idle on both is reclaimed', async () => {
    const box = simBox(2)
    const request = (owner: typeof ALICE) => upRequest(owner, {target: target('a6000'), count: 4, hostGpu: null, mpsAvailable: false, mpsOnHost: null})
    const quad = await bringUp(request(ALICE), box.deps)
    expect(quad.parts.map((p) => p.gpuIndex)).toEqual([1])
    // alice's ranks 2 and 3 compute on GPU 1, none on her first GPU
    const rank3 = quad.parts[0].session.moreSlices![0]!.gpuInstanceId
    box.sim.set('gpus.1.processes', [{pid: 4242, name: 'python3', used_mib: 900, type: 'C', gi: rank3, ci: 0}])
    const start = Date.parse(quad.session.createdAt)
    const reap = (ms: number) => reapSessions({...box.deps, policy, now: () => start + ms})
    expect((await reap(9_000)).actions).toEqual([])
    expect((await reap(30_000)).actions).toEqual([])
    expect(listSessions(box.stateDir, SANDBOX).map((l) => l.session.name)).toEqual([quad.name, quad.name])
    // once nothing computes on either GPU, it is warned and then ended whole
    box.sim.set('gpus.1.processes', [])
    expect((await reap(39_000)).actions).toMatchObject([{name: quad.name, action: 'warned', reason: 'idle'}])
    expect((await reap(42_000)).actions).toMatchObject([{name: quad.name, action: 'ended', reason: 'idle'}])
    expect(listSessions(box.stateDir, SANDBOX)).toEqual([])
  })

  it('the reaper ends a spread session whole though another GPU’s journal is damaged', async () => {
    const box = simBox(3)
    const up = await bringUp(upRequest(ALICE, {target: target('a6000'), count: 4, hostGpu: null, ttlMs: 10_000}), box.deps)
    mkdirSync(join(box.stateDir, 'gpus'), {recursive: true})
    writeFileSync(join(box.stateDir, 'gpus', `${box.sim.state().gpus[2].uuid}.json`), '{"damaged')
    const reaped = await reapSessions({...box.deps, policy: NO_POLICY, now: () => Date.parse(up.session.createdAt) + 10_500})
    expect(reaped.actions).toMatchObject([{name: up.name, action: 'ended', reason: 'ttl'}])
    expect(scanBooks(box.stateDir, SANDBOX, {skipCorrupt: true}).books.flatMap(({book}) => Object.keys(book.sessions))).toEqual([])
    expect([0, 1].map((gpu) => box.sim.state().gpus[gpu].gis)).toEqual([[], []])
  })

  it('the reaper keeps the name of a spread session whose part sits in a damaged book', async () => {
    const box = simBox(3)
    const up = await bringUp(upRequest(ALICE, {target: target('a6000'), count: 4, hostGpu: null, ttlMs: 10_000}), box.deps)
    writeFileSync(join(box.stateDir, 'gpus', `${up.parts[0].gpuUuid}.json`), '{"damaged')
    const reaped = await reapSessions({...box.deps, policy: NO_POLICY, now: () => Date.parse(up.session.createdAt) + 10_500})
    expect(reaped.actions).toMatchObject([{name: up.name, action: 'ended', reason: 'ttl'}])
    expect(readdirSync(join(box.stateDir, 'sessions'))).toEqual([`${up.name}.json`])
  })

  it('a login resets the idle clock and withdraws its warning', async () => {
    const box = simBox()
    const up = await bringUp(upRequest(ALICE), box.deps)
    const start = Date.parse(up.session.createdAt)
    await reapSessions({...box.deps, policy, now: () => start + 9_000})
    expect(listSessions(box.stateDir, SANDBOX)[0].session.warnedAt).toBeDefined()
    const result = await reapSessions({...box.deps, policy, logins: async () => start + 9_500, now: () => start + 11_000})
    expect(result.actions).toEqual([])
    expect(listSessions(box.stateDir, SANDBOX)[0].session.warnedAt).toBeUndefined()
  })
})
