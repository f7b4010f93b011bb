import type {HostModel} from '../catalog/types.js'
import type {Plan} from '../plan/types.js'

/** GPU-wide values a plan needs that neither MIG, the GPU operator nor Slurm can set. */
export type GpuWideSettings = {
  readonly clockMHz: number | null
  readonly powerLimitW: number | null
}

/**
 * The GPU-wide settings the plan asks for: a clock lock, and a power cap when it is below the model's
 * default limit (at or above it nothing changes). Null when the plan needs neither.
 */
export function gpuWideSettings(plan: Plan, model: HostModel): GpuWideSettings | null {
  const powerLimitW = plan.powerLimitW !== null && plan.powerLimitW < model.powerDefaultW ? plan.powerLimitW : null
  if (plan.clockMHz === null && powerLimitW === null) return null
  return {clockMHz: plan.clockMHz, powerLimitW}
}

/**
 * `gpu-cosplay lease hold|release` (commands/lease/, apply/lease-hold.ts): GPU-wide leases without instances.
 * The contract these exports rely on: `hold` takes (or joins) the lease for HOLDER, applies the settings when it
 * is the first holder, and returns; `release` drops HOLDER's lease and restores the values read before the
 * first hold once no holder (lease or `up` session) is left; both are idempotent. Renderers append
 * `--holder NAME` (a Slurm job id is only known to the shell that runs the prolog); the command accepts
 * [A-Za-z0-9][A-Za-z0-9_.-]{0,79}, which covers k8s-<DaemonSet name> (at most 67) and slurm-job-<id>.
 */
export function leaseHoldArgv(hostGpu: number, settings: GpuWideSettings): string[] {
  return [
    'gpu-cosplay',
    'lease',
    'hold',
    '--host-gpu',
    String(hostGpu),
    ...(settings.clockMHz === null ? [] : ['--clock-mhz', String(settings.clockMHz)]),
    ...(settings.powerLimitW === null ? [] : ['--power-limit-w', String(settings.powerLimitW)]),
  ]
}

export function leaseReleaseArgv(hostGpu: number): string[] {
  return ['gpu-cosplay', 'lease', 'release', '--host-gpu', String(hostGpu)]
}

export function describeSettings(settings: GpuWideSettings): string {
  const parts = [
    ...(settings.clockMHz === null ? [] : [`a clock lock at ${settings.clockMHz} MHz`]),
    ...(settings.powerLimitW === null ? [] : [`a ${settings.powerLimitW} W power limit`]),
  ]
  return parts.join(' and ')
}
