import {InputError, StateError} from '../core/errors.js'
import {type BookStoreDeps, listReadableSessions, type OpenBook, scanBooks, type SessionLocation, withBook} from './book-store.js'
import {unwindSession} from './journal.js'
import {type BookSession, isLeaseSession, isSessionPart} from './gpu-book.js'
import {releaseName} from './session-names.js'

export type Requester = {readonly uid: number; readonly isRoot: boolean}

export type ClosedSession = {
  readonly name: string
  readonly gpuUuid: string
  /** the target's key; null for a lease hold */
  readonly target: string | null
  /** GPU-wide settings this session was the last to hold, now put back */
  readonly restored: readonly string[]
  readonly notes: readonly string[]
}

/**
 * Ends sessions: container first, then the compute and GPU instance by their IDs, then the GPU-wide
 * leases (the last holder restores the recorded values). Names are all checked before anything changes;
 * a name given twice is ended once. A lease hold's name (lease:HOLDER) ends that holder's holds on every GPU. The GPU is read with `-q` alone: undoing needs its index and settings, and
 * the steps that look for instances list them themselves.
 */
export async function tearDown(names: readonly string[], requester: Requester, deps: BookStoreDeps): Promise<ClosedSession[]> {
  // a damaged book of another GPU does not stop the others' sessions from ending; a session that may have a record in
  // it (a name found nowhere, a spread session with a record on an unread GPU, a lease hold) is not touched
  const {sessions: all, damaged, readable} = listReadableSessions(deps.stateDir, deps.trust)
  const chosen = [...new Set(names)].flatMap((name) => {
    // a spread session's first record before its parts: its container holds their devices, and once it is gone the
    // parts are void (a crash from here on leaves them for the next command to roll back)
    const found = all.filter((l) => l.session.name === name).sort((a, b) => Number(isSessionPart(a.session)) - Number(isSessionPart(b.session)))
    if (damaged.length > 0 && (found.length === 0 || found.some((l) => mayHaveUnreadRecords(l.session, readable)))) throw damaged[0]
    if (found.length === 0) {
      throw new InputError('UNKNOWN_SESSION', `no session named "${name}"`, {fix: ['see them: gpu-cosplay ps']})
    }
    for (const {session} of found) assertMayEnd(session, requester)
    return found
  })

  const closed: ClosedSession[] = []
  for (const [i, location] of chosen.entries()) {
    const ended = await withBook(deps, {uuid: location.gpuUuid, name: location.gpuName}, (open) => tearDownLocked(location, open, deps), {read: 'settings'})
    // the name stays claimed until the session's last record is ended: nobody else's session can take it meanwhile
    if (chosen[i + 1]?.session.name !== location.session.name) releaseName(deps.stateDir, location.session.name)
    // one entry per session: a part's restored settings and notes join its first record's
    const same = isSessionPart(location.session) ? closed.find((c) => c.name === ended.name) : undefined
    if (same) closed[closed.indexOf(same)] = {...same, restored: [...same.restored, ...ended.restored], notes: [...same.notes, ...ended.notes]}
    else closed.push(ended)
  }
  return closed
}

/** Whether a session may also be recorded in a book that could not be read: its other GPUs' books, or any (a lease hold). */
function mayHaveUnreadRecords(session: BookSession, readable: ReadonlySet<string>): boolean {
  if (isLeaseSession(session)) return true
  if (session.partOf) return !readable.has(session.partOf.gpuUuid)
  return (session.spread?.parts ?? []).some((p) => !readable.has(p.gpuUuid))
}

/**
 * A spread session's parts, after its first record ended (the reaper's end): each under its own GPU's lock. unreached:
 * a part's book could not be read (damaged), so the part may still be there, void, until that book is repaired.
 */
export async function endPartsOf(session: BookSession, deps: BookStoreDeps): Promise<{closed: ClosedSession[]; unreached: boolean}> {
  const closed: ClosedSession[] = []
  if (isLeaseSession(session) || !session.spread) return {closed, unreached: false}
  let unreached = false
  // read once: it only says which GPU each part's book is for (each part is ended under its own lock below); a damaged
  // book of another GPU must not stop the parts from ending (the first record is ended already)
  const scan = scanBooks(deps.stateDir, deps.trust, {skipCorrupt: true})
  for (const part of session.spread.parts) {
    const book = scan.books.find((b) => b.book.gpu.uuid === part.gpuUuid)
    if (!book) {
      unreached ||= scan.damaged.length > 0
      continue
    }
    const ended = await withBook(
      deps,
      book.book.gpu,
      async (open) => {
        const mine = open.book.sessions[session.name]
        return mine && !isLeaseSession(mine) && mine.partOf?.createdAt === session.createdAt ? endSessionLocked(mine, open, deps) : null
      },
      {read: 'settings'},
    )
    if (ended) closed.push(ended)
  }
  return {closed, unreached}
}

export function assertMayEnd(session: BookSession, requester: Requester): void {
  if (session.owner.uid === requester.uid || requester.isRoot) return
  throw new StateError('NOT_OWNER', `session "${session.name}" belongs to ${session.owner.user} (uid ${session.owner.uid})`, {
    exit: 4,
    fix: ['ask them to end it, or run as root'],
  })
}

async function tearDownLocked(location: SessionLocation, open: OpenBook, deps: BookStoreDeps): Promise<ClosedSession> {
  const {book} = open
  const name = location.session.name
  // the record listed, not one made since under the same name (its creation time tells them apart)
  const session = book.sessions[name]?.createdAt === location.session.createdAt ? book.sessions[name] : undefined
  if (!session) {
    // Lost to a reboot (its instances are gone with it), or ended by another process meanwhile; a spread session's part
    // is rolled back by whoever opens its book once the first record is gone.
    if (open.recovered.includes(name) || isSessionPart(location.session))
      return {name, gpuUuid: book.gpu.uuid, target: targetOf(location.session), restored: [], notes: open.notes}
    throw new InputError('UNKNOWN_SESSION', `no session named "${name}" (ended meanwhile?)`, {fix: ['see them: gpu-cosplay ps']})
  }
  return endSessionLocked(session, open, deps)
}

/**
 * Ends one session of an open book (an `up` session or a lease hold): marks it stopping, so that a crash from
 * here on is finished by the next command, undoes its journal newest-first, and drops it.
 */
export async function endSessionLocked(session: BookSession, open: OpenBook, deps: BookStoreDeps): Promise<ClosedSession> {
  const {book, persist} = open
  const name = session.name
  session.phase = 'stopping'
  persist()
  const heldBefore = Object.entries(book.leases)
    .filter(([, l]) => l?.holders.includes(name))
    .map(([k]) => k)
  const ctx = open.contextFor(session)
  await unwindSession(ctx, persist, deps.steps)
  delete book.sessions[name]
  persist()
  const restored = heldBefore.filter((k) => !(k in book.leases))
  return {name, gpuUuid: book.gpu.uuid, target: targetOf(session), restored, notes: [...open.notes, ...ctx.notes]}
}

function targetOf(session: BookSession): string | null {
  return isLeaseSession(session) ? null : session.target.key
}
