/** `down` and `extend`: what a session's owner (or root) does to a session's life, on this box. */
import type {ClosedSession} from '../apply/tear-down.js'
import type {ExtendResult} from '../apply/session-clock.js'
import type {CallContext} from '../core/call-context.js'
import {InputError} from '../core/errors.js'
import {escapeControl} from '../core/failure.js'
import type {Progress} from './request-io.js'

export type {ClosedSession} from '../apply/tear-down.js'
export type {ExtendResult} from '../apply/session-clock.js'

export type DownResult = {closed: ClosedSession[]}

/** Ends the named sessions (or, with `all`, every one the caller may end); the owner or root only. */
export async function endSessions(
  call: CallContext,
  request: {readonly names: readonly string[]; readonly all: boolean},
  progress: Progress | null,
): Promise<DownResult> {
  const {names, all} = request
  if (names.length === 0 && !all) throw new InputError('NO_SESSION_GIVEN', 'name the sessions to end, or pass --all', {fix: ['gpu-cosplay ps lists them']})
  if (names.length > 0 && all) throw new InputError('BAD_USAGE', 'give session names or --all, not both')
  const [{applyContext}, {tearDown}, {listReadableSessions}] = await Promise.all([
    import('./apply-context.js'),
    import('../apply/tear-down.js'),
    import('../apply/book-store.js'),
  ])
  const ctx = await applyContext(call, {mutates: true})
  const readable = all ? listReadableSessions(ctx.stateDir.dir, call.policy) : null
  // --all cannot know what a damaged book holds: it ends nothing rather than part of the caller's sessions
  if (readable && readable.damaged.length > 0) throw readable.damaged[0]
  const chosen = readable ? readable.sessions.filter((l) => ctx.isRoot || l.session.owner.uid === ctx.owner.uid).map((l) => l.session.name) : names
  if (chosen.length > 0) progress?.start(`Ending ${escapeControl(chosen.join(', '))}`)
  try {
    const closed = await tearDown(chosen, {uid: ctx.owner.uid, isRoot: ctx.isRoot}, ctx.deps)
    if (chosen.length > 0) progress?.stop('done')
    return {closed}
  } catch (error) {
    if (chosen.length > 0) progress?.stop('failed')
    throw error
  }
}

/** Moves a session's end by `byMs`, within the box's maximum TTL. */
export async function extendSessionBy(call: CallContext, request: {readonly name: string; readonly byMs: number}): Promise<ExtendResult> {
  const [{sessionPolicyOf}, {applyContext}, {extendSession}] = await Promise.all([
    import('../apply/session-policy.js'),
    import('./apply-context.js'),
    import('../apply/session-clock.js'),
  ])
  const ctx = await applyContext(call, {mutates: false})
  return extendSession(request.name, request.byMs, {uid: ctx.owner.uid, isRoot: ctx.isRoot}, sessionPolicyOf(call.box), ctx.stateDir.dir, call.policy)
}
