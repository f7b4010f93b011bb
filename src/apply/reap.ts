import createDebug from 'debug'

import {formatDuration} from '../core/duration.js'
import type {StatePolicy} from '../core/state-policy.js'
import {DEBUG_NS} from '../core/names.js'
import {type SessionPolicy, warnLeadMs} from './session-policy.js'
import type {HostGpu} from '../host/types.js'
import {amendSession, type BookStoreDeps, scanBooks, withBook} from './book-store.js'
import {type BookSession, type GpuBook, isLeaseSession, isSessionPart, migSlotsOf, type SessionRecord} from './gpu-book.js'
import {lastActiveMs, ttlWarnLeadMs} from './session-clock.js'
import {releaseName} from './session-names.js'
import {type ClosedSession, endPartsOf, endSessionLocked} from './tear-down.js'

const debug = createDebug(DEBUG_NS.apply)

/**
 * The reaper: ends the sessions whose TTL ran out, and (when the box reclaims idle sessions) those nobody
 * used for the configured time, after telling their users. Run as root by the timer `system install` sets up
 * (`gpu-cosplay system reap`), and, where nothing is installed, by every command that opens the state (client/reap-due.ts).
 * A session is ended exactly as `down` ends it (endSessionLocked, journaled under the GPU's lock), so a reaper killed
 * mid-way leaves a stopping session that the next command, or `recover`, finishes.
 */

/** Tells a session's users something (a line to their terminals in the container, and a notice shown at login). */
export type SessionNotifier = (session: SessionRecord, message: string) => Promise<void>
/** When the session's users last logged in (ms since the epoch; Date.now() while one is logged in); null: unknown. */
export type LoginActivity = (session: SessionRecord) => Promise<number | null>

export type ReapDeps = BookStoreDeps & {
  readonly policy: SessionPolicy
  readonly notify?: SessionNotifier
  readonly logins?: LoginActivity
  readonly now?: () => number
}

export type ReapAction = {
  readonly name: string
  readonly owner: string
  readonly action: 'warned' | 'ended'
  readonly reason: 'ttl' | 'idle'
  /** for warned: ms until the end */
  readonly inMs: number | null
}

export type ReapResult = {
  readonly actions: ReapAction[]
  readonly closed: ClosedSession[]
  /** what could not be done this time (a notice that did not reach a container, a GPU that could not be read) */
  readonly notes: string[]
}

export async function reapSessions(deps: ReapDeps): Promise<ReapResult> {
  const now = deps.now ?? Date.now
  const result: ReapResult = {actions: [], closed: [], notes: []}
  const books = scanBooks(deps.stateDir, deps.trust, {skipCorrupt: true}).books.map(({book}) => book)
  const busy = deps.policy.idleReclaimMs === null ? new Set<string>() : await sessionsComputing(deps, books, result.notes)
  for (const book of books) {
    // a spread session is reaped by its first record (its clock), which ends its parts too
    const sessions = Object.values(book.sessions).filter((s): s is SessionRecord => !isLeaseSession(s) && !isSessionPart(s) && s.phase === 'active')
    for (const session of sessions) {
      try {
        await reapOne(deps, book, session, busy.has(sessionKey(session)), now, result)
      } catch (error) {
        debug('reaping %s failed: %O', session.name, error)
        result.notes.push(`${session.name}: ${(error as Error).message}`)
      }
    }
  }
  return result
}

async function reapOne(deps: ReapDeps, book: GpuBook, seen: SessionRecord, computing: boolean, now: () => number, result: ReapResult): Promise<void> {
  let session = seen
  const idleReclaim = deps.policy.idleReclaimMs
  if (idleReclaim !== null) {
    const login = computing ? null : await deps.logins?.(session).catch(() => null)
    const activeAt = computing ? now() : (login ?? 0)
    if (activeAt > lastActiveMs(session)) {
      // in use again: its idle clock starts over, and an idle warning no longer holds
      await amendSession(deps.stateDir, deps.trust, book.gpu.uuid, session.name, (s) => {
        s.activeAt = new Date(Math.min(activeAt, now())).toISOString()
        if (s.warnedAt && !ttlWarnDue(s, now())) delete s.warnedAt
      })
      session = {...session, activeAt: new Date(Math.min(activeAt, now())).toISOString(), warnedAt: undefined}
    }
  }
  const due = dueOf(session, idleReclaim, now())
  if (due === null) return
  if (due.action === 'warn' || (due.reason === 'idle' && !session.warnedAt)) {
    if (session.warnedAt) return
    const inMs = due.action === 'warn' ? due.inMs : warnLeadMs(idleReclaim!)
    const message = warning(session, due.reason, inMs)
    await deps
      .notify?.(session, message)
      .catch((error: unknown) => result.notes.push(`${session.name}: the warning did not reach it (${(error as Error).message})`))
    await amendSession(deps.stateDir, deps.trust, book.gpu.uuid, session.name, (s) => {
      s.warnedAt = new Date(now()).toISOString()
      // an idle session first warned past its time gets its full lead from now
      if (due.reason === 'idle' && due.action === 'end') s.activeAt = new Date(now() - idleReclaim! + inMs).toISOString()
    })
    result.actions.push({name: session.name, owner: session.owner.user, action: 'warned', reason: due.reason, inMs})
    return
  }
  if (!session.warnedAt) {
    // its TTL ran out before a pass saw it within the warning lead: the users still hear it, as it goes
    await deps.notify?.(session, warning(session, 'ttl', 0)).catch(() => undefined)
  }
  const closed = await endIfStillDue(deps, book, session.name, due.reason, now)
  if (closed) {
    result.closed.push(closed)
    result.actions.push({name: session.name, owner: session.owner.user, action: 'ended', reason: due.reason, inMs: null})
  }
}

type Due = {action: 'warn'; reason: 'ttl' | 'idle'; inMs: number} | {action: 'end'; reason: 'ttl' | 'idle'}

function dueOf(session: SessionRecord, idleReclaimMs: number | null, now: number): Due | null {
  if (session.expiresAt) {
    const left = Date.parse(session.expiresAt) - now
    if (left <= 0) return {action: 'end', reason: 'ttl'}
    if (left <= ttlWarnLeadMs(session)!) return {action: 'warn', reason: 'ttl', inMs: left}
  }
  if (idleReclaimMs !== null) {
    const idle = now - lastActiveMs(session)
    if (idle >= idleReclaimMs) return {action: 'end', reason: 'idle'}
    if (idle >= idleReclaimMs - warnLeadMs(idleReclaimMs)) return {action: 'warn', reason: 'idle', inMs: idleReclaimMs - idle}
  }
  return null
}

function ttlWarnDue(session: BookSession, now: number): boolean {
  return session.expiresAt !== undefined && Date.parse(session.expiresAt) - now <= ttlWarnLeadMs(session)!
}

function warning(session: SessionRecord, reason: 'ttl' | 'idle', inMs: number): string {
  const when = inMs <= 0 ? 'now' : `in ${formatDuration(inMs)}`
  const why = reason === 'ttl' ? 'its time is up' : 'nothing has used it for a while'
  const keep = reason === 'ttl' ? `gpu-cosplay extend ${session.name} --by 1h` : 'run something on its GPU, or log in'
  return `gpu-cosplay: session ${session.name} ends ${when} (${why}); save your work. To keep it: ${keep}`
}

/** Under the GPU's lock, ended as `down` ends it, if it is still due (an extend or a login may have come meanwhile). */
async function endIfStillDue(deps: ReapDeps, book: GpuBook, name: string, reason: 'ttl' | 'idle', now: () => number): Promise<ClosedSession | null> {
  let ended: BookSession | null = null
  const closed = await withBook(
    deps,
    book.gpu,
    async (open) => {
      const session = open.book.sessions[name]
      if (!session || isLeaseSession(session) || session.phase !== 'active') return null
      const due = dueOf(session, deps.policy.idleReclaimMs, now())
      if (due?.action !== 'end' || due.reason !== reason) return null
      ended = session
      return endSessionLocked(session, open, deps)
    },
    {read: 'settings'},
  )
  if (!closed) return null
  const {closed: parts, unreached} = ended ? await endPartsOf(ended, deps) : {closed: [], unreached: false}
  // a part left in a damaged book keeps the name until that book is repaired (recover releases it then)
  if (!unreached) releaseName(deps.stateDir, name)
  return {...closed, restored: [...closed.restored, ...parts.flatMap((p) => p.restored)], notes: [...closed.notes, ...parts.flatMap((p) => p.notes)]}
}

/** One session, whichever GPU a record of it is on: a spread session's parts share its name and creation time. */
function sessionKey(s: SessionRecord): string {
  return `${s.name}\u0000${s.createdAt}`
}

/**
 * The sessions (sessionKey) with a compute process of their own on one of their slices (the MPS server aside), from
 * one `-q` of each GPU that holds an active record: a spread session computing on any of its GPUs is in use.
 */
async function sessionsComputing(deps: ReapDeps, books: readonly GpuBook[], notes: string[]): Promise<Set<string>> {
  const busy = new Set<string>()
  const active = (book: GpuBook) => Object.values(book.sessions).filter((s): s is SessionRecord => !isLeaseSession(s) && s.phase === 'active')
  await Promise.all(
    books.map(async (book) => {
      const records = active(book)
      if (records.length === 0) return
      let live: HostGpu
      try {
        live = await deps.gpu.probeGpu(book.gpu.uuid, {mig: false})
      } catch (error) {
        notes.push(`${book.gpu.uuid}: cannot read its processes (${(error as Error).message}); no session on it counts as idle`)
        for (const s of records) busy.add(sessionKey(s))
        return
      }
      const workers = live.processes.filter((p) => !/nvidia-cuda-mps-server/.test(p.name))
      for (const s of records) {
        const slots = migSlotsOf(s)
        if (slots.length === 0 ? workers.length > 0 : workers.some((p) => slots.some((slot) => p.gpuInstanceId === slot.gpuInstanceId))) busy.add(sessionKey(s))
      }
    }),
  )
  return busy
}

/**
 * Whether a reaper pass has anything to do now, from the books alone (no GPU read, no Docker): a session within its
 * warning lead or past its end, or idle reclaim on while sessions are up. Lets every command of a sandbox reap cheaply.
 */
export function isReapDue(stateDir: string, trust: StatePolicy, policy: SessionPolicy, now: number = Date.now()): boolean {
  return scanBooks(stateDir, trust, {skipCorrupt: true}).books.some(({book}) =>
    Object.values(book.sessions).some((s) => !isLeaseSession(s) && s.phase === 'active' && (policy.idleReclaimMs !== null || dueOf(s, null, now) !== null)),
  )
}
