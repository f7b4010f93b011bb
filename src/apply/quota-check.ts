import {StateError} from '../core/errors.js'
import type {Quota} from './session-policy.js'
import {QUOTA_LOCK} from '../core/state-layout.js'
import type {StatePolicy} from '../core/state-policy.js'
import {listSessions} from './book-store.js'
import {type BookSession, type GpuBook, isLeaseSession, isSessionPart, rankCountOf} from './gpu-book.js'
import {withGpuLock} from './gpu-lock.js'

/**
 * Quotas: how many sessions and memory slices one user holds at once, across every GPU of the box. The
 * check that counts and the write that records the new session run under one box-wide lock (taken inside a GPU's
 * lock, never the other way round), so two `up`s on two GPUs cannot both pass on the same last free place.
 */

/** A session on the whole GPU holds all of its memory: eight slices, as on A100, H100 and H200. */
export const WHOLE_GPU_SLICES = 8

export type Holding = {readonly sessions: number; readonly slices: number}

/** A session of N devices (up --count N) holds what N sessions of one would; it counts as one session. */
export function slicesOf(session: BookSession): number {
  if (isLeaseSession(session)) return 0
  return (session.plan.mig?.memorySlices ?? WHOLE_GPU_SLICES) * rankCountOf(session)
}

/**
 * What uid holds: `up` sessions in every book, those of the open (locked) books from them, which may be newer than
 * their files. A session spread over several GPUs counts once, by its first record (which counts all its ranks).
 */
export function holdingOf(state: {readonly stateDir: string; readonly trust: StatePolicy}, uid: number, opened: readonly GpuBook[]): Holding {
  const uuids = new Set(opened.map((b) => b.gpu.uuid))
  const sessions = [
    ...listSessions(state.stateDir, state.trust)
      .filter((l) => !uuids.has(l.gpuUuid))
      .map((l) => l.session),
    ...opened.flatMap((b) => Object.values(b.sessions)),
  ].filter((s) => !isLeaseSession(s) && !isSessionPart(s) && s.owner.uid === uid)
  return {sessions: sessions.length, slices: sessions.reduce((sum, s) => sum + slicesOf(s), 0)}
}

/** QUOTA_EXCEEDED (exit 4) when one more session of `slices` would take the user past their quota. */
export function assertWithinQuota(quota: Quota, held: Holding, slices: number): void {
  const over =
    quota.sessions !== null && held.sessions + 1 > quota.sessions
      ? `${quota.source} is ${quota.sessions} session(s)`
      : quota.slices !== null && held.slices + slices > quota.slices
        ? `${quota.source} is ${quota.slices} memory slice(s) and this session needs ${slices}`
        : null
  if (over === null) return
  throw new StateError('QUOTA_EXCEEDED', `${over}; you hold ${held.sessions} session(s) with ${held.slices} memory slice(s)`, {
    exit: 4,
    fix: ['end one first: gpu-cosplay ps, then gpu-cosplay down NAME', 'or ask an admin for more (system install --quota-sessions/--quota-slices)'],
  })
}

/** The box-wide lock of the quota check (a lock folder beside the GPUs' own: gpus/box-quota.lock). */
export function withQuotaLock<T>(stateDir: string, trust: StatePolicy, fn: () => Promise<T>): Promise<T> {
  return withGpuLock(stateDir, QUOTA_LOCK, fn, {waitMs: 30_000, trust})
}
