import {matchHostModel, resolveHostModel} from '../../catalog/resolve-target.js'
import type {Catalog} from '../../catalog/types.js'
import {HostError, InputError} from '../../core/errors.js'
import {probeHost} from '../../host/probe.js'
import type {Smi} from '../../host/smi.js'
import type {HostGpu, HostProbe} from '../../host/types.js'
import {planHostFromModel, planHostFromProbe} from '../../plan/plan-host.js'
import type {PlanHost} from '../../plan/types.js'

export type HostChoice = {on?: string; hostGpu?: number}

/** `--on MODEL` plans against a catalog model and needs no GPU; otherwise probe and pick `--host-gpu` (default 0). */
export async function resolvePlanHost(
  catalog: Catalog,
  choice: HostChoice,
  smi: () => Smi,
): Promise<{host: PlanHost; probe: HostProbe | null}> {
  if (choice.on !== undefined) return {host: planHostFromModel(resolveHostModel(catalog, choice.on)), probe: null}
  const probe = await probeOrExplain(smi())
  const gpu = pickGpu(probe, choice.hostGpu ?? 0)
  return {host: planHostFromProbe(gpu, hostModelFor(catalog, gpu)), probe}
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

export function pickGpu(probe: HostProbe, index: number): HostGpu {
  const gpu = probe.gpus.find((g) => g.index === index)
  if (!gpu) {
    throw new InputError('GPU_INDEX_OUT_OF_RANGE', `there is no GPU ${index} on this host (it has ${probe.gpus.length}: 0-${probe.gpus.length - 1})`, {
      fix: ['list them: gpu-cosplay doctor'],
    })
  }
  return gpu
}

export function hostModelFor(catalog: Catalog, gpu: HostGpu) {
  const model = matchHostModel(catalog, gpu.name)
  if (!model) {
    throw new HostError('UNKNOWN_HOST_GPU', `GPU ${gpu.index} (${gpu.name}) is not in the host catalog`, {
      fix: ['describe it in a hosts: entry under $XDG_CONFIG_HOME/gpu-cosplay/catalog.d/', 'or plan against a known model: --on h200'],
    })
  }
  return model
}
