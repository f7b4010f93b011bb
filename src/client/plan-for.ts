import {homedir} from 'node:os'

import {resolveHostModel} from '../catalog/resolve-target.js'
import type {Catalog, Target} from '../catalog/types.js'
import {HostError} from '../core/errors.js'
import {pickGpu} from '../host/pick-gpu.js'
import {probeHost} from '../host/probe.js'
import type {Smi} from '../host/smi.js'
import type {HostProbe} from '../host/types.js'
import {planCosplay} from '../plan/plan-cosplay.js'
import {hostModelFor, planHostFromModel, planHostFromProbe} from '../plan/plan-host.js'
import type {GpuWideRequest, Objective, Plan, PlanHost} from '../plan/types.js'

export type PlanRequest = GpuWideRequest & {
  readonly on?: string
  readonly hostGpu?: number
  readonly objective: Objective
  readonly strict: boolean
  /** override what this host has (exports plan for a cluster, which runs no MPS daemon of ours) */
  readonly mpsAvailable?: boolean
}

/**
 * `--on MODEL` plans against an idle catalog model and needs no GPU. Otherwise the plan is what the next
 * `up` with the same arguments would do: the probed GPU (default 0), the GPU-wide values other sessions
 * hold (read from the state directory without a lock, creating nothing), and the same refusals.
 */
export async function planFor(
  catalog: Catalog,
  target: Target,
  request: PlanRequest,
  smi: () => Smi,
): Promise<{plan: Plan; host: PlanHost; probe: HostProbe | null}> {
  if (request.on !== undefined) {
    // A model stands for a host with a current driver, which ships the MPS control binary.
    const host = planHostFromModel(resolveHostModel(catalog, request.on), {mpsAvailable: request.mpsAvailable ?? true})
    return {plan: planCosplay(target, host, request.objective, {}, request), host, probe: null}
  }
  const probe = await probeOrExplain(smi())
  const gpu = pickGpu(probe, request.hostGpu ?? 0)
  const {findMpsControl} = await import('../host/mps.js')
  const host = planHostFromProbe(gpu, hostModelFor(catalog, gpu), {mpsAvailable: request.mpsAvailable ?? findMpsControl(process.env) !== null})
  const [{findStateDir}, {bookPath, heldSettings, readBook}, {planOnGpu}] = await Promise.all([
    import('../apply/state-dir.js'),
    import('../apply/gpu-book.js'),
    import('../plan/plan-on-gpu.js'),
  ])
  const stateDir = findStateDir(process.env, homedir())
  const book = stateDir ? readBook(bookPath(stateDir.dir, gpu.uuid)) : null
  return {plan: planOnGpu(target, host, request.objective, book ? heldSettings(book) : {holders: []}, request), host, probe}
}

async function probeOrExplain(smi: Smi): Promise<HostProbe> {
  try {
    return await probeHost(smi)
  } catch (error) {
    if (error instanceof HostError && error.code === 'SMI_NOT_FOUND') {
      throw new HostError('SMI_NOT_FOUND', `${error.message}`, {
        cause: error,
        fix: ['plan against a built-in host model instead: gpu-cosplay plan 3090 --on h200', 'or set GPU_COSPLAY_NVIDIA_SMI to the nvidia-smi path'],
      })
    }
    throw error
  }
}
