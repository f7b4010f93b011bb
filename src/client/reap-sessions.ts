/** `system reap`: one pass of the reaper, what its timer runs (root's on an installed box; a sandbox's own user's). */
import type {ReapResult} from '../apply/reap.js'
import type {CallContext} from '../core/call-context.js'

export type {ReapResult} from '../apply/reap.js'

/** Warns the sessions near their end and ends those past it (or idle past the reclaim time), as down ends them. */
export async function reapSessions(call: CallContext): Promise<ReapResult> {
  const [{assertMayReap, reapBox}, {applyContext}] = await Promise.all([import('../system/reap-box.js'), import('./apply-context.js')])
  assertMayReap(call)
  return reapBox(call, async () => (await applyContext(call, {mutates: true, reapFirst: false})).deps)
}
