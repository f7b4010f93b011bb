/**
 * The session a session command (ssh, exec, verify, report, ssh-config) means: the one named, or the
 * caller's only one. Reads the books without the lock (they are replaced atomically).
 */
import {listSessions} from './book-store.js'
import {isLeaseSession, isSessionPart, type SessionRecord} from './gpu-book.js'
import {InputError, StateError} from '../core/errors.js'
import type {StatePolicy} from '../core/state-policy.js'

export function pickSession(stateDir: string, trust: StatePolicy, name: string | undefined, requester: {uid: number; isRoot: boolean}): SessionRecord {
  const every = listSessions(stateDir, trust).map((l) => l.session)
  // A lease hold has no container to reach: these commands never mean one.
  // a spread session is reached through its first record (the one with the container)
  const all = every.filter((s): s is SessionRecord => !isLeaseSession(s) && !isSessionPart(s))
  if (name !== undefined) {
    const found = all.find((s) => s.name === name)
    if (!found && every.some((s) => s.name === name)) {
      throw new InputError('LEASE_HAS_NO_CONTAINER', `"${name}" is a GPU-wide lease hold (gpu-cosplay lease hold), with no container to reach`, {
        fix: ['see the sessions that have one: gpu-cosplay ps'],
      })
    }
    if (!found) throw new InputError('UNKNOWN_SESSION', `no session named "${name}"`, {fix: ['see them: gpu-cosplay ps']})
    if (found.owner.uid !== requester.uid && !requester.isRoot) {
      throw new StateError('NOT_OWNER', `session "${name}" belongs to ${found.owner.user} (uid ${found.owner.uid})`, {exit: 4})
    }
    return found
  }
  const mine = all.filter((s) => s.owner.uid === requester.uid && s.phase === 'active')
  if (mine.length === 1) return mine[0]
  if (mine.length === 0) throw new InputError('NO_SESSION', 'you have no session', {fix: ['start one: gpu-cosplay up 3090']})
  throw new InputError('AMBIGUOUS_SESSION', `you have ${mine.length} sessions (${mine.map((s) => s.name).join(', ')}); name one`, {
    fix: ['see them: gpu-cosplay ps'],
  })
}
