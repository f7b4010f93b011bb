/** `recover`: finish or roll back what gpu-cosplay processes that died mid-way left in the journals, on every GPU. */
import type {RecoverResult} from '../apply/recover.js'
import type {CallContext} from '../core/call-context.js'

export type {RecoverResult} from '../apply/recover.js'

export async function recoverState(call: CallContext): Promise<RecoverResult> {
  const [{applyContext}, {recoverAll}] = await Promise.all([import('./apply-context.js'), import('../apply/recover.js')])
  return recoverAll((await applyContext(call, {mutates: true})).deps)
}
