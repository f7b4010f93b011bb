import type {Target} from '../catalog/types.js'
import {StateError} from '../core/errors.js'
import {planCosplay} from './plan-cosplay.js'
import type {Objective, Plan, PlanConstraints, PlanHost, PlanOptions} from './types.js'

/** GPU-wide values other sessions on this GPU hold now (from its book), and who holds them. */
export type HeldSettings = {
  readonly clockMHz?: number | null
  readonly powerLimitW?: number
  readonly holders: readonly string[]
}

export type PlanOnGpuOptions = PlanOptions & {
  /** fail instead of sharing GPU-wide settings another session holds at a different value */
  readonly strict: boolean
}

/**
 * What `up` will do on a probed GPU, and so what `plan --host-gpu` shows: the same refusals (MIG cannot
 * be turned on, a held setting with --strict) and the same plan, living with the values others hold.
 */
export function planOnGpu(target: Target, host: PlanHost, objective: Objective, held: HeldSettings, options: PlanOnGpuOptions): Plan {
  assertMigUsable(host)
  const constraints: PlanConstraints = {
    ...(held.clockMHz !== undefined ? {clockMHz: held.clockMHz} : {}),
    ...(held.powerLimitW !== undefined ? {powerLimitW: held.powerLimitW} : {}),
  }
  if (options.strict && (constraints.clockMHz !== undefined || constraints.powerLimitW !== undefined)) {
    const wanted = planCosplay(target, host, objective, {}, options)
    const conflicts: string[] = []
    // Only a setting this session would take can conflict; a slice shaped by MPS takes none.
    if (wanted.gpuWide.clockLock && constraints.clockMHz !== undefined && constraints.clockMHz !== wanted.clockMHz) {
      conflicts.push(`clocks ${showClock(constraints.clockMHz)} (wanted ${showClock(wanted.clockMHz)})`)
    }
    if (wanted.gpuWide.powerLimit && constraints.powerLimitW !== undefined && constraints.powerLimitW !== wanted.powerLimitW) {
      conflicts.push(`power limit ${constraints.powerLimitW} W (wanted ${wanted.powerLimitW} W)`)
    }
    if (conflicts.length > 0) {
      throw new StateError('LEASE_CONFLICT', `GPU ${host.index} is shared with ${held.holders.join(', ')}, who hold ${conflicts.join(' and ')}`, {
        fix: ['drop --strict to share the values in force (the plan is recomputed with them)', 'or use another GPU: --host-gpu N'],
      })
    }
  }
  return planCosplay(target, host, objective, constraints, options)
}

function assertMigUsable(host: PlanHost): void {
  if (host.migBlocker === 'pending-reset') {
    throw new StateError('MIG_PENDING_RESET', `GPU ${host.index}: MIG mode is pending a GPU reset, so no MIG instance can be made`, {
      fix: ['an administrator must reset the idle GPU (nvidia-smi -i N -r) or reboot', 'or use another GPU: --host-gpu N'],
    })
  }
  if (host.migBlocker === 'busy') {
    throw new StateError('GPU_BUSY', `GPU ${host.index}: ${host.migUnavailableReason}`, {
      fix: ['stop those processes, or use another GPU: --host-gpu N'],
    })
  }
}

function showClock(clockMHz: number | null): string {
  return clockMHz === null ? 'unlocked' : `locked at ${clockMHz} MHz`
}
