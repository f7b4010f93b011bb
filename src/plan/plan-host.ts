import {matchHostModel} from '../catalog/resolve-target.js'
import type {Catalog, HostModel} from '../catalog/types.js'
import {HostError} from '../core/errors.js'
import type {HostGpu} from '../host/types.js'
import type {PlanCalibration} from './measured-throughput.js'
import type {MigBlocker, PlanHost, ProfileOption} from './types.js'

/** What the planner assumes for `--on MODEL`: an idle GPU of that model, MIG available, every slice free. */
export function planHostFromModel(model: HostModel, options: {mpsAvailable?: boolean} = {}): PlanHost {
  return {
    mpsAvailable: options.mpsAvailable ?? false,
    name: model.name,
    index: null,
    model,
    profiles: model.mig ? model.mig.profiles.map((p): ProfileOption => ({...p, free: p.maxInstances, total: p.maxInstances})) : null,
    migUnavailableReason: model.mig ? null : `${model.name} has no MIG`,
    migBlocker: null,
    migEnabled: model.mig !== null,
    clockRangeMHz: {min: model.clockMinMHz, max: model.clockMaxMHz},
    powerRangeW: {min: model.powerMinW, max: model.powerMaxW},
  }
}

/**
 * What the planner knows about a probed GPU: its catalog model for the physics, and the live state
 * (free slices, ranges, MIG mode) from nvidia-smi.
 */
export function planHostFromProbe(gpu: HostGpu, model: HostModel, options: {mpsAvailable?: boolean; calibration?: PlanCalibration | null} = {}): PlanHost {
  const base = {
    mpsAvailable: options.mpsAvailable ?? false,
    calibration: options.calibration ?? null,
    name: gpu.name,
    index: gpu.index,
    model,
    ...settingRangesOf(gpu, model),
  }
  const unavailable = (reason: string, blocker: MigBlocker | null): PlanHost => ({
    ...base,
    profiles: null,
    migUnavailableReason: reason,
    migBlocker: blocker,
    migEnabled: false,
  })

  if (gpu.migMode === null || model.mig === null) return unavailable(`${gpu.name} has no MIG`, null)
  if (gpu.migMode.current === 'enabled') {
    if (gpu.migProfiles === null) {
      // The probe degrades a refused `mig -lgip` to null; planning on it would read as "no slot is free".
      throw new HostError('MIG_PROFILES_UNREADABLE', `GPU ${gpu.index} has MIG on, but nvidia-smi mig -lgip was refused, so its free slices are unknown`, {
        exit: 4,
        fix: ['run as root, or allow passwordless sudo for nvidia-smi', `or plan against the model: --on ${model.key}`],
      })
    }
    return {...base, profiles: liveProfiles(gpu, model), migUnavailableReason: null, migBlocker: null, migEnabled: true}
  }
  if (gpu.migMode.pending === 'enabled') return unavailable('MIG mode is pending a GPU reset', 'pending-reset')
  if (gpu.processes.length > 0) {
    const pids = gpu.processes.map((p) => p.pid).join(', ')
    return unavailable(`MIG mode is off and ${gpu.processes.length} process(es) use the GPU (pid ${pids}), so it cannot be turned on`, 'busy')
  }
  return {...planHostFromModel(model), ...base, migEnabled: false}
}

/** The clock and power-limit ranges a probed GPU accepts: what it reports, else what its model says. */
export function settingRangesOf(gpu: HostGpu, model: HostModel): Pick<PlanHost, 'clockRangeMHz' | 'powerRangeW'> {
  return {
    clockRangeMHz: {min: model.clockMinMHz, max: gpu.clocks.maxGraphicsMHz ?? model.clockMaxMHz},
    powerRangeW: {min: gpu.power.minW ?? model.powerMinW, max: gpu.power.maxW ?? model.powerMaxW},
  }
}

function liveProfiles(gpu: HostGpu, model: HostModel): ProfileOption[] {
  const specs = model.mig?.profiles ?? []
  const sliceGiB = model.memoryGiB / (model.mig?.memorySlices ?? 1)
  return (gpu.migProfiles ?? []).map((live) => {
    const spec = specs.find((s) => s.id === live.id) ?? specs.find((s) => s.name === live.name)
    return {
      name: live.name,
      id: live.id,
      smCount: live.smCount,
      memoryGiB: live.memoryGiB,
      // -lgip does not print memory slices; a profile missing from the catalog is sized by its memory.
      memorySlices: spec?.memorySlices ?? Math.max(1, Math.ceil(live.memoryGiB / sliceGiB - 0.05)),
      free: live.free,
      total: live.total,
    }
  })
}

/** The catalog model of a probed GPU: the planner's physics come from it. */
export function hostModelFor(catalog: Catalog, gpu: HostGpu): HostModel {
  const model = matchHostModel(catalog, gpu.name)
  if (!model) {
    throw new HostError('UNKNOWN_HOST_GPU', `GPU ${gpu.index} (${gpu.name}) is not in the host catalog`, {
      fix: ['describe it in a hosts: entry under $XDG_CONFIG_HOME/gpu-cosplay/catalog.d/', 'or plan against a known model: --on h200'],
    })
  }
  return model
}
