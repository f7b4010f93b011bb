import {InputError, StateError} from '../core/errors.js'
import {type BookStoreDeps, listSessions, type OpenBook, type SessionLocation, withBook} from './book-store.js'
import {unwindSession} from './engine.js'
import {releaseName} from './session-names.js'

export type Requester = {readonly uid: number; readonly isRoot: boolean}

export type ClosedSession = {
  readonly name: string
  readonly gpuUuid: string
  readonly target: string
  /** GPU-wide settings this session was the last to hold, now put back */
  readonly restored: readonly string[]
  readonly notes: readonly string[]
}

/**
 * Ends sessions: container first, then the compute and GPU instance by their IDs, then the GPU-wide
 * leases (the last holder restores the recorded values). Names are all checked before anything changes;
 * a name given twice is ended once. The GPU is read with `-q` alone: undoing needs its index and settings, and
 * the steps that look for instances list them themselves.
 */
export async function tearDown(names: readonly string[], requester: Requester, deps: BookStoreDeps): Promise<ClosedSession[]> {
  const all = listSessions(deps.stateDir)
  const chosen = [...new Set(names)].map((name) => {
    const found = all.find((l) => l.session.name === name)
    if (!found) {
      throw new InputError('UNKNOWN_SESSION', `no session named "${name}"`, {fix: ['see them: gpu-cosplay ps']})
    }
    if (found.session.owner.uid !== requester.uid && !requester.isRoot) {
      throw new StateError('NOT_OWNER', `session "${name}" belongs to ${found.session.owner.user} (uid ${found.session.owner.uid})`, {
        exit: 4,
        fix: ['ask them to end it, or run as root'],
      })
    }
    return found
  })

  const closed: ClosedSession[] = []
  for (const location of chosen) {
    closed.push(await withBook(deps, {uuid: location.gpuUuid, name: location.gpuName}, (open) => tearDownLocked(location, open, deps), {read: 'settings'}))
    releaseName(deps.stateDir, location.session.name)
  }
  return closed
}

async function tearDownLocked(location: SessionLocation, open: OpenBook, deps: BookStoreDeps): Promise<ClosedSession> {
  const {book, persist} = open
  const name = location.session.name
  const session = book.sessions[name]
  if (!session) {
    // Lost to a reboot (its instances are gone with it), or ended by another process meanwhile.
    if (open.recovered.includes(name)) return {name, gpuUuid: book.gpu.uuid, target: location.session.target.key, restored: [], notes: open.notes}
    throw new InputError('UNKNOWN_SESSION', `no session named "${name}" (ended meanwhile?)`, {fix: ['see them: gpu-cosplay ps']})
  }
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
  return {name, gpuUuid: book.gpu.uuid, target: session.target.key, restored, notes: [...open.notes, ...ctx.notes]}
}
