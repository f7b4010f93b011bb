/** `system reap`: one pass of the reaper, what its timer runs (root's on an installed box; a sandbox's own user's). */
import type {ReapResult} from '../apply/reap.js'

export type {ReapResult} from '../apply/reap.js'

/** Warns the sessions near their end and ends those past it (or idle past the reclaim time), as down ends them. */
export async function reapSessions(): Promise<ReapResult> {
  const [{assertMayReap, reapBox}, {applyContext}] = await Promise.all([import('../system/reap-box.js'), import('./apply-context.js')])
  assertMayReap()
  return reapBox(async () => (await applyContext({mutates: true, reapFirst: false})).deps)
}
