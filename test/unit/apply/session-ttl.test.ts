/**
 * Issue 20, sessions with an end: the reaper warns, then ends a session at its TTL exactly as `down` does; extend moves
 * the end within the box's maximum. Over the nvidia-smi simulator, with the reaper's clock moved instead of sleeping.
 */
import {afterAll, beforeEach, describe, expect, it, jest} from '@jest/globals'

import {bringUp} from '../../../src/apply/bring-up.js'
import {listSessions} from '../../../src/apply/book-store.js'
import {reapSessions, isReapDue} from '../../../src/apply/reap.js'
import {clockOf, extendSession, sessionClocks} from '../../../src/apply/session-clock.js'
import {NO_POLICY, resolveTtlMs, sessionPolicyOf, warnLeadMs} from '../../../src/apply/session-policy.js'
import {cleanupTemps} from '../../cli/support/run-cli.js'
import {target} from '../plan/catalog-for-tests.js'
import {thrown} from '../support/thrown.js'
import {ALICE, BOB, gpuPicture, type SimBox, simBox, upRequest} from './sim-deps.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

let box: SimBox
beforeEach(() => {
  box = simBox()
})

/** the reaper's clock, `ms` after the session started (bring-up itself takes a while over the simulator) */
const at = (up: {session: {createdAt: string}}, ms: number) => () => Date.parse(up.session.createdAt) + ms

describe('a session with a TTL', () => {
  it('is warned within its lead, then ended at its end with the GPU as found', async () => {
    const before = gpuPicture(box.sim)
    const up = await bringUp(upRequest(ALICE, {ttlMs: 10_000}), box.deps)
    expect(up.session.expiresAt).toBeDefined()
    expect(clockOf(up.session, at(up, 1_000)()).timeLeftMs).toBeGreaterThanOrEqual(9_000)
    const told: string[] = []
    const notify = async (_s: unknown, message: string) => void told.push(message)

    // 10 s: told 2 s before (a fifth of the lifetime, under ten minutes)
    expect(warnLeadMs(10_000)).toBe(2_000)
    const early = await reapSessions({...box.deps, policy: NO_POLICY, notify, now: at(up, 5_000)})
    expect(early.actions).toEqual([])
    const warned = await reapSessions({...box.deps, policy: NO_POLICY, notify, now: at(up, 8_500)})
    expect(warned.actions).toMatchObject([{name: up.name, action: 'warned', reason: 'ttl'}])
    expect(told).toHaveLength(1)
    expect(told[0]).toContain(up.name)
    // warned once only
    await reapSessions({...box.deps, policy: NO_POLICY, notify, now: at(up, 9_000)})
    expect(told).toHaveLength(1)

    const ended = await reapSessions({...box.deps, policy: NO_POLICY, notify, now: at(up, 10_500)})
    expect(ended.actions).toMatchObject([{name: up.name, action: 'ended', reason: 'ttl'}])
    expect(ended.closed).toMatchObject([{name: up.name}])
    expect(listSessions(box.stateDir, SANDBOX)).toEqual([])
    expect(gpuPicture(box.sim)).toEqual(before)
  })

  it('a session spread over two GPUs is extended, warned and ended whole, both GPUs as found', async () => {
    const two = simBox(2)
    const before = [0, 1].map((g) => gpuPicture(two.sim, g))
    const up = await bringUp(upRequest(ALICE, {target: target('a6000'), count: 4, hostGpu: null, ttlMs: 10_000}), two.deps)
    expect(up.parts).toHaveLength(1)
    // one clock: the first record's, listed once
    expect(sessionClocks(two.stateDir, SANDBOX).map((c) => c.name)).toEqual([up.name])
    const moved = await extendSession(up.name, 5_000, {uid: ALICE.uid, isRoot: false}, NO_POLICY, two.stateDir, SANDBOX)
    expect(Date.parse(moved.expiresAt)).toBe(Date.parse(up.session.expiresAt!) + 5_000)
    const warned = await reapSessions({...two.deps, policy: NO_POLICY, now: at(up, 13_500)})
    expect(warned.actions).toMatchObject([{name: up.name, action: 'warned'}])
    const ended = await reapSessions({...two.deps, policy: NO_POLICY, now: at(up, 15_500)})
    expect(ended.actions).toMatchObject([{name: up.name, action: 'ended', reason: 'ttl'}])
    expect(ended.closed).toHaveLength(1)
    expect(listSessions(two.stateDir, SANDBOX)).toEqual([])
    expect([0, 1].map((g) => gpuPicture(two.sim, g))).toEqual(before)
  })

  it('a session without a TTL is never reaped, and is not due', async () => {
    await bringUp(upRequest(ALICE), box.deps)
    expect(isReapDue(box.stateDir, SANDBOX, NO_POLICY, Date.now() + 86_400_000)).toBe(false)
    const up = listSessions(box.stateDir, SANDBOX)[0]
    const result = await reapSessions({...box.deps, policy: NO_POLICY, now: at(up, 86_400_000)})
    expect(result.actions).toEqual([])
    expect(sessionClocks(box.stateDir, SANDBOX)).toMatchObject([{expiresAt: null, timeLeftMs: null}])
  })

  it('is ended at its end even when no pass came within its lead: the users hear it as it goes', async () => {
    const up = await bringUp(upRequest(ALICE, {ttlMs: 5_000}), box.deps)
    const told: string[] = []
    const result = await reapSessions({...box.deps, policy: NO_POLICY, notify: async (_s, m) => void told.push(m), now: at(up, 6_000)})
    expect(result.closed.map((c) => c.name)).toEqual([up.name])
    expect(told).toEqual([expect.stringContaining('ends now')])
  })
})

describe('extend', () => {
  const policy = sessionPolicyOf({defaultTtl: '5s', maxTtl: '20s'})

  it('moves the end within the maximum, and not beyond; a member only their own', async () => {
    const ttl = resolveTtlMs(undefined, policy, false)
    expect(ttl).toBe(5_000)
    const up = await bringUp(upRequest(ALICE, {ttlMs: ttl}), box.deps)
    const moved = await extendSession(up.name, 10_000, {uid: ALICE.uid, isRoot: false}, policy, box.stateDir, SANDBOX, at(up, 1_000))
    expect(moved.timeLeftMs).toBe(14_000)
    expect(Date.parse(moved.expiresAt)).toBeGreaterThan(Date.parse(up.session.expiresAt!))
    await expect(extendSession(up.name, 10_000, {uid: ALICE.uid, isRoot: false}, policy, box.stateDir, SANDBOX, at(up, 1_000))).rejects.toMatchObject({
      code: 'TTL_TOO_LONG',
      exit: 2,
    })
    expect(listSessions(box.stateDir, SANDBOX)[0].session.expiresAt).toBe(moved.expiresAt)
    await expect(extendSession(up.name, 1_000, {uid: BOB.uid, isRoot: false}, policy, box.stateDir, SANDBOX)).rejects.toMatchObject({
      code: 'NOT_OWNER',
      exit: 4,
    })
    // root may go past the maximum
    const byRoot = await extendSession(up.name, 60_000, {uid: 0, isRoot: true}, policy, box.stateDir, SANDBOX)
    expect(byRoot.timeLeftMs).toBeGreaterThan(60_000)
  })

  it('clears the warning, so the users are told again before the new end', async () => {
    const up = await bringUp(upRequest(ALICE, {ttlMs: 10_000}), box.deps)
    await reapSessions({...box.deps, policy, notify: async () => undefined, now: at(up, 9_000)})
    expect(listSessions(box.stateDir, SANDBOX)[0].session.warnedAt).toBeDefined()
    await extendSession(up.name, 5_000, {uid: ALICE.uid, isRoot: false}, policy, box.stateDir, SANDBOX, at(up, 9_000))
    expect(listSessions(box.stateDir, SANDBOX)[0].session.warnedAt).toBeUndefined()
  })

  it('refuses a --ttl over the maximum before anything, and a session with no end', async () => {
    expect(thrown(() => resolveTtlMs('1m', policy, false))).toMatchObject({code: 'TTL_TOO_LONG', exit: 2})
    expect(thrown(() => resolveTtlMs('soon', policy, false))).toMatchObject({code: 'BAD_DURATION', exit: 2})
    expect(resolveTtlMs('1m', policy, true)).toBe(60_000)
    const up = await bringUp(upRequest(ALICE), box.deps)
    await expect(extendSession(up.name, 1_000, {uid: ALICE.uid, isRoot: false}, policy, box.stateDir, SANDBOX)).rejects.toMatchObject({code: 'NO_TTL'})
  })
})
