import {InputError} from '../core/errors.js'
import type {StatePolicy} from '../core/state-policy.js'
import {formatDuration} from '../core/duration.js'
import {assertWithinMax, type SessionPolicy, warnLeadMs} from './session-policy.js'
import {amendSession, listSessions} from './book-store.js'
import {type BookSession, isLeaseSession, isSessionPart} from './gpu-book.js'
import {assertMayEnd, type Requester} from './tear-down.js'

/**
 * A session's clock: when it ends (its TTL, moved by extend), when its users are told, how long it has sat
 * idle. What `ps`, `status` and the metrics show, and what the reaper (reap.ts) acts on.
 */

export type SessionClock = {
  readonly name: string
  /** ISO time the session ends by itself; null: never */
  readonly expiresAt: string | null
  /** ms until then (0 once due); null: never */
  readonly timeLeftMs: number | null
  /** ms since the last use the reaper saw (a compute process of its own, an ssh login), or since it started */
  readonly idleMs: number
  /** its users were told it ends soon (at this ISO time); null: not yet */
  readonly warnedAt: string | null
}

export function clockOf(session: BookSession, now: number = Date.now()): SessionClock {
  const expires = session.expiresAt ? Date.parse(session.expiresAt) : null
  return {
    name: session.name,
    expiresAt: session.expiresAt ?? null,
    timeLeftMs: expires === null ? null : Math.max(0, expires - now),
    idleMs: Math.max(0, now - lastActiveMs(session)),
    warnedAt: session.warnedAt ?? null,
  }
}

/** The last use the reaper recorded, else the session's start. */
export function lastActiveMs(session: BookSession): number {
  return Math.max(Date.parse(session.createdAt), session.activeAt ? Date.parse(session.activeAt) : 0)
}

/** The warning lead of a session with an end: min(10 min, a fifth of its lifetime from start to end). */
export function ttlWarnLeadMs(session: BookSession): number | null {
  if (!session.expiresAt) return null
  return warnLeadMs(Date.parse(session.expiresAt) - Date.parse(session.createdAt))
}

/** Every `up` session's clock, for `ps`/`status`/metrics (lease holds never end by themselves). */
export function sessionClocks(stateDir: string, trust: StatePolicy, now: number = Date.now()): SessionClock[] {
  return listSessions(stateDir, trust)
    .filter((l) => !isLeaseSession(l.session) && !isSessionPart(l.session))
    .map((l) => clockOf(l.session, now))
}

export type IdleSession = {readonly name: string; readonly owner: string; readonly idleMs: number; readonly reclaimInMs: number}

/**
 * The sessions idle for longer than the warning lead of idle reclaim, and how long until they are ended (status).
 * Empty when the box does not reclaim idle sessions.
 */
export function idleSessions(stateDir: string, trust: StatePolicy, policy: SessionPolicy, now: number = Date.now()): IdleSession[] {
  const reclaim = policy.idleReclaimMs
  if (reclaim === null) return []
  return listSessions(stateDir, trust)
    .filter((l) => !isLeaseSession(l.session) && !isSessionPart(l.session) && l.session.phase === 'active')
    .map(({session}) => ({name: session.name, owner: session.owner.user, idleMs: clockOf(session, now).idleMs}))
    .filter((s) => s.idleMs >= reclaim - warnLeadMs(reclaim))
    .map((s) => ({...s, reclaimInMs: Math.max(0, reclaim - s.idleMs)}))
}

export type ExtendResult = {readonly name: string; readonly expiresAt: string; readonly timeLeftMs: number}

/**
 * `extend NAME --by DURATION`: the owner (or root) moves the end later. The time left afterwards may not exceed the
 * box's maximum TTL (root's may). A session with no end has nothing to extend.
 */
export async function extendSession(
  name: string,
  byMs: number,
  requester: Requester,
  policy: SessionPolicy,
  stateDir: string,
  trust: StatePolicy,
  now: () => number = Date.now,
): Promise<ExtendResult> {
  // a spread session's clock is its first record's
  const found = listSessions(stateDir, trust).find((l) => l.session.name === name && !isLeaseSession(l.session) && !isSessionPart(l.session))
  if (!found) throw new InputError('UNKNOWN_SESSION', `no session named "${name}"`, {fix: ['see them: gpu-cosplay ps']})
  assertMayEnd(found.session, requester)
  let result: ExtendResult | null = null
  await amendSession(stateDir, trust, found.gpuUuid, name, (session) => {
    if (!session.expiresAt) {
      throw new InputError('NO_TTL', `session "${name}" has no end to extend`, {fix: ['it runs until gpu-cosplay down'], cause: null})
    }
    const at = now()
    const expires = Math.max(Date.parse(session.expiresAt), at) + byMs
    assertWithinMax(expires - at, policy, requester.isRoot, `extending ${name} by ${formatDuration(byMs)} (${formatDuration(expires - at)} left)`)
    session.expiresAt = new Date(expires).toISOString()
    delete session.warnedAt
    result = {name, expiresAt: session.expiresAt, timeLeftMs: expires - at}
  })
  if (result === null) throw new InputError('UNKNOWN_SESSION', `no session named "${name}" (ended meanwhile?)`, {fix: ['see them: gpu-cosplay ps']})
  return result
}
