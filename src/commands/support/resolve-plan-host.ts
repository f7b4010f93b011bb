import {resolveHostModel} from '../../catalog/resolve-target.js'
import type {Catalog} from '../../catalog/types.js'
import {HostError} from '../../core/errors.js'
import {probeHost} from '../../host/probe.js'
import type {Smi} from '../../host/smi.js'
import type {HostProbe} from '../../host/types.js'
import {hostModelFor, planHostFromModel, planHostFromProbe} from '../../plan/plan-host.js'
import {pickGpu} from '../../host/pick-gpu.js'
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
  const model = hostModelFor(catalog, gpu)
  if (gpu.migMode?.current === 'enabled' && gpu.migProfiles === null) {
    // The probe degrades a refused `mig -lgip` to null; planning on it would read as "no slot is free".
    throw new HostError('MIG_PROFILES_UNREADABLE', `GPU ${gpu.index} has MIG on, but nvidia-smi mig -lgip was refused, so its free slices are unknown`, {
      exit: 4,
      fix: ['run as root (or with GPU_COSPLAY_SUDO=1 and passwordless sudo for nvidia-smi)', `or plan against the model: --on ${model.key}`],
    })
  }
  return {host: planHostFromProbe(gpu, model), probe}
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
