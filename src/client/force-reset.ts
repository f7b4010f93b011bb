/** `reset`: the day state is lost. Root ends every session on one GPU and puts its settings back. */
import type {ResetResult} from '../apply/reset-gpu.js'
import type {CallContext} from '../core/call-context.js'
import {StateError} from '../core/errors.js'
import type {Spinner} from './progress.js'

export type {ResetResult} from '../apply/reset-gpu.js'

/**
 * Undoes every session's journal on GPU `hostGpu` (all users') and restores the GPU-wide settings recorded before
 * the first; with no usable record, to driver defaults. Root only.
 */
export async function forceReset(call: CallContext, hostGpu: number, spinner: Spinner | null): Promise<ResetResult> {
  const [{applyContext}, {resetGpu}] = await Promise.all([import('./apply-context.js'), import('../apply/reset-gpu.js')])
  const ctx = await applyContext(call, {mutates: true})
  if (!ctx.isRoot) {
    throw new StateError('ROOT_ONLY', `reset ends every user's sessions on GPU ${hostGpu}: only root may run it`, {
      exit: 4,
      fix: ['end your own sessions: gpu-cosplay down --all', `ask an admin: sudo gpu-cosplay reset --host-gpu ${hostGpu} --yes`],
    })
  }
  spinner?.start(`Resetting GPU ${hostGpu}`)
  try {
    const result = await resetGpu(hostGpu, ctx.deps)
    spinner?.stop('done')
    return result
  } catch (error) {
    spinner?.stop('failed')
    throw error
  }
}
