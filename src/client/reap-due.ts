/**
 * Where no `system install` put a reaper timer (a sandbox, a team set-up), nothing ends a session at its TTL while
 * nobody runs a command: so every command that opens the state first ends what is due, the way the timer would.
 */
import type {BookStoreDeps} from '../apply/book-store.js'
import type {CallContext} from '../core/call-context.js'
import {NO_POLICY} from '../apply/session-policy.js'

let reaping = false

export async function reapWhatIsDue(call: CallContext, stateDir: string, open: () => Promise<BookStoreDeps>): Promise<void> {
  // the engine of an installed box has its timer; a reap already under way opens the state itself
  if (reaping || call.box !== null) return
  // from the books alone, before the reaper (and Docker's client) is loaded: usually nothing is due
  const {isReapDue} = await import('../apply/reap.js')
  if (!isReapDue(stateDir, call.policy, NO_POLICY)) return
  reaping = true
  try {
    const {reapBox} = await import('../system/reap-box.js')
    await reapBox(call, open)
  } catch (error) {
    // the command asked for something else: say what failed and go on; a half-ended session is finished by recover
    process.stderr.write(`gpu-cosplay: note: ending sessions whose time is up failed: ${(error as Error).message.split('\n')[0]}\n`)
  } finally {
    reaping = false
  }
}
