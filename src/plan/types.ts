import type {HostModel, MigProfileBase, MigProfileSpec} from '../catalog/types.js'
import type {MigAvailability} from '../host/types.js'
import type {PlanCalibration} from './measured-throughput.js'
import type {PLAN_BASES, PlanShape} from './plan-schema.js'

export {OBJECTIVES, type Objective} from './objectives.js'

/** A MIG GPU-instance profile as the planner sees it: static shape plus how many could be created now. */
export type ProfileOption = MigProfileBase & Pick<MigProfileSpec, 'memorySlices'> & MigAvailability

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
  /** why MIG cannot be turned on now although the model has it: `up` must refuse, and `plan` says so in advance */
  readonly migBlocker: MigBlocker | null
  /** true when MIG mode is already on; false means `up` would have to enable it */
  readonly migEnabled: boolean
  readonly clockRangeMHz: {readonly min: number; readonly max: number}
  readonly powerRangeW: {readonly min: number; readonly max: number}
  /** an MPS control daemon can be started here: sessions are shaped per slice, GPU-wide knobs stay for the whole GPU */
  readonly mpsAvailable: boolean
  /** this GPU's calibration (gpu-cosplay calibrate), where there is one: it moves the host's measured rates */
  readonly calibration?: PlanCalibration | null
}

/** GPU-wide settings a session on a slice may still take, because the user asked (`up --lock-clock`, `--cap-power`). */
export type GpuWideRequest = {
  readonly lockClock?: boolean
  readonly capPower?: boolean
}

/** measured: aim at what the target measures with what this host measures; datasheet: peaks against datasheets */
export type PlanBasis = (typeof PLAN_BASES)[number]

/** What the caller asks of a plan besides the objective: GPU-wide knobs, and the basis (default measured). */
export type PlanOptions = GpuWideRequest & {readonly basis?: PlanBasis}

export type MigBlocker = 'pending-reset' | 'busy'

/** GPU-wide values other sessions already hold on this GPU; the plan must live with them. */
export type PlanConstraints = {
  /** a clock lock in force; null = clocks are not locked by anyone */
  readonly clockMHz?: number | null
  readonly powerLimitW?: number | null
}

export type Plan = Readonly<PlanShape>
export type TargetSummary = Plan['target']
export type MpsShaping = NonNullable<Plan['mps']>
export type Expected = Plan['expected']
export type MeasuredPlan = NonNullable<Plan['measured']>
export type PlanRanks = NonNullable<Plan['ranks']>
