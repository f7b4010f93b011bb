/** `system reap`: one pass of the reaper for this box, as the timer system install set up runs it (root). */
import {homedir} from 'node:os'

import type {BookStoreDeps} from '../apply/book-store.js'
import {isReapDue, type ReapResult} from '../apply/reap.js'
import {findStateDir} from '../apply/state-dir.js'
import {reapNow} from '../container/session-reaper.js'
import {isSandbox} from '../core/box-config.js'
import type {CallContext} from '../core/call-context.js'
import {StateError} from '../core/errors.js'
import {readBoxConfig} from '../core/read-box-config.js'
import {sessionPolicyOf} from '../apply/session-policy.js'

/** On an installed box the reaper ends anyone's session: root's alone. A sandbox of one's own is its user's. */
export function assertMayReap(call: CallContext, env: Readonly<Record<string, string | undefined>> = process.env): void {
  if (call.caller.isRoot || isSandbox(env) || readBoxConfig() === null) return
  throw new StateError('ROOT_ONLY', 'system reap ends anyone’s session: on this shared box only root runs it (the reaper timer does)', {
    exit: 4,
    fix: ['sudo gpu-cosplay system reap', 'see whether a reaper is installed: gpu-cosplay system status'],
  })
}

/** A pass when something is due; `open` (the commands' apply context) is made only then, so an idle timer costs no GPU call. */
export async function reapBox(call: CallContext, open: () => Promise<BookStoreDeps>): Promise<ReapResult> {
  const policy = sessionPolicyOf(call.box)
  const found = findStateDir(process.env, homedir())
  if (found === null || !isReapDue(found.dir, call.policy, policy)) return {actions: [], closed: [], notes: []}
  return reapNow(await open(), policy)
}
