import type {MigProfileBase} from '../catalog/types.js'

/** What a probe of the host's GPUs returns. Fields nvidia-smi printed as [N/A] or
 * [Insufficient Permissions] are null, and their names are listed in `unavailable`. */

export type MigModeState = 'enabled' | 'disabled'

export type PowerLimits = {
  /** the enforced limit ("Current Power Limit", older drivers "Enforced Power Limit") */
  readonly currentW: number | null
  /** what was last set with -pl ("Requested Power Limit", older drivers "Power Limit"); this is what a restore must put back */
  readonly requestedW: number | null
  readonly defaultW: number | null
  readonly minW: number | null
  readonly maxW: number | null
}

/** How many instances of a MIG profile could be created now, and at most (`mig -lgip` "Free/Total"). */
export type MigAvailability = {
  readonly free: number
  readonly total: number
}

/** One row of `nvidia-smi mig -lgip`. */
export type MigProfile = MigProfileBase & MigAvailability & {readonly gpuIndex: number}

/** One row of `nvidia-smi mig -lgi`. */
export type GpuInstance = {
  readonly gpuIndex: number
  readonly profileName: string
  readonly profileId: number
  readonly id: number
  readonly placementStart: number
  readonly placementSize: number
}

/** One row of `nvidia-smi mig -lci`. */
export type ComputeInstance = {
  readonly gpuIndex: number
  readonly gpuInstanceId: number
  readonly profileName: string
  readonly profileId: number
  readonly id: number
  readonly placementStart: number | null
  readonly placementSize: number | null
}

/** A MIG device as `nvidia-smi -L` and the default table's "MIG devices" section show it, joined. */
export type MigDevice = {
  readonly gpuIndex: number
  readonly deviceIndex: number
  readonly profileName: string
  readonly uuid: string
  readonly gpuInstanceId: number | null
  readonly computeInstanceId: number | null
}

export type GpuProcess = {
  readonly gpuIndex: number
  readonly pid: number
  readonly gpuInstanceId: number | null
  readonly computeInstanceId: number | null
  readonly name: string
  readonly usedMiB: number | null
}

export type HostGpu = {
  readonly index: number
  readonly name: string
  readonly uuid: string
  readonly busId: string
  readonly persistenceMode: boolean | null
  /** null when the GPU has no MIG (printed N/A) */
  readonly migMode: {readonly current: MigModeState; readonly pending: MigModeState} | null
  readonly power: PowerLimits
  readonly clocks: {readonly maxGraphicsMHz: number | null; readonly currentGraphicsMHz: number | null}
  readonly memoryTotalMiB: number | null
  /** from `mig -lgip`; null when MIG is not enabled on this GPU */
  readonly migProfiles: readonly MigProfile[] | null
  /** from `mig -lgi`; empty when MIG is off */
  readonly gpuInstances: readonly GpuInstance[]
  readonly processes: readonly GpuProcess[]
  readonly unavailable: readonly string[]
  /** the driver that printed it, where the read says (a calibration is per host model and driver) */
  readonly driverVersion?: string | null
}

export type HostProbe = {
  readonly driverVersion: string | null
  readonly cudaVersion: string | null
  readonly gpus: readonly HostGpu[]
  /** how many times nvidia-smi ran for this probe */
  readonly smiCalls: number
}
