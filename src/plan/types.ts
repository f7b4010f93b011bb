import type {HostModel} from '../catalog/types.js'

export const OBJECTIVES = ['balanced', 'fp32', 'bf16', 'bandwidth'] as const
export type Objective = (typeof OBJECTIVES)[number]

/** A MIG GPU-instance profile as the planner sees it: static shape plus how many could be created now. */
export type ProfileOption = {
  readonly name: string
  readonly id: number
  readonly smCount: number
  readonly memoryGiB: number
  readonly memorySlices: number
  readonly free: number
  readonly total: number
}

/**
 * Everything the planner knows about the GPU it plans for. Built either from a catalog host model
 * (`--on h200`: an idle GPU) or from a probe of a real GPU (live free counts and ranges).
 */
export type PlanHost = {
  readonly name: string
  /** physical GPU index, null when planning against a model */
  readonly index: number | null
  readonly model: HostModel
  /** null: this GPU cannot use MIG now (not capable, pending reset, busy); the reason goes in migUnavailableReason */
  readonly profiles: readonly ProfileOption[] | null
  readonly migUnavailableReason: string | null
  /** true when MIG mode is already on; false means `up` would have to enable it */
  readonly migEnabled: boolean
  readonly clockRangeMHz: {readonly min: number; readonly max: number}
  readonly powerRangeW: {readonly min: number; readonly max: number}
}

/** GPU-wide values other sessions already hold on this GPU; the plan must live with them. */
export type PlanConstraints = {
  /** a clock lock in force; null = clocks are not locked by anyone */
  readonly clockMHz?: number | null
  readonly powerLimitW?: number | null
}

export type TargetSummary = {
  readonly key: string
  readonly name: string
  readonly fp32Tflops: number
  readonly bf16Tflops: number | null
  readonly bandwidthGBs: number
  readonly vramGB: number
  readonly tdpW: number
}

export type MigChoice = {
  readonly profile: string
  readonly profileId: number
  readonly smCount: number
  readonly memoryGiB: number
  readonly memorySlices: number
}

export type Expected = {
  readonly fp32Tflops: number
  readonly bf16Tflops: number
  readonly bandwidthGBs: number
  readonly vramGB: number
}

/** signed percent, (expected - target) / target; null where the target has no such figure */
export type AxisErrors = {
  readonly fp32Pct: number
  readonly bf16Pct: number | null
  readonly bandwidthPct: number
  readonly vramPct: number
}

export type Plan = {
  readonly target: TargetSummary
  readonly host: {readonly name: string; readonly index: number | null; readonly model: string}
  readonly objective: Objective
  readonly mig: MigChoice | null
  /** true when `up` must turn MIG mode on first */
  readonly needsMigEnable: boolean
  readonly smCount: number
  /** the clock to lock (MHz); null = leave clocks unlocked (the plan runs at the GPU's maximum) */
  readonly clockMHz: number | null
  /** the clock the estimate assumes (the lock, or the maximum when unlocked) */
  readonly effectiveClockMHz: number
  readonly powerLimitW: number
  readonly vramCapGB: number
  readonly vramCapMiB: number
  readonly expected: Expected
  readonly errors: AxisErrors
  readonly warnings: readonly string[]
}
