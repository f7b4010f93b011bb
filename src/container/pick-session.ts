/**
 * The session a session command (ssh, exec, verify, report, ssh-config) means: the one named, or the
 * caller's only one. Reads the books without the lock (they are replaced atomically).
 */
import {listSessions} from '../apply/book-store.js'
import type {SessionRecord} from '../apply/gpu-book.js'
import {InputError, StateError} from '../core/errors.js'

export function pickSession(stateDir: string, name: string | undefined, requester: {uid: number; isRoot: boolean}): SessionRecord {
  const all = listSessions(stateDir).map((l) => l.session)
  if (name !== undefined) {
    const found = all.find((s) => s.name === name)
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
