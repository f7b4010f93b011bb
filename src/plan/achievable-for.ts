import type {TargetReference} from '../catalog/types.js'
import {errorPct, round} from '../core/units.js'
import type {Calibration, CalibrationFractions} from '../host/calibration.js'
import type {Plan} from './types.js'

/** What the command edge found about a calibration for the planned GPU. */
export type CalibrationLookup =
  | {readonly status: 'found'; readonly file: string; readonly calibration: Calibration}
  | {readonly status: 'missing'; readonly model: string; readonly driver: string}
  /** planned against a catalog model (--on): there is no host GPU to have measured */
  | {readonly status: 'model'}

export const THROUGHPUT_AXES = ['fp32', 'bf16', 'bandwidth'] as const
export type ThroughputAxis = (typeof THROUGHPUT_AXES)[number]

/** The plan's field for each axis, and the decimals it is shown with (as the planner rounds its expected figures). */
export const THROUGHPUT_FIELDS = {
  fp32: {key: 'fp32Tflops', digits: 2},
  bf16: {key: 'bf16Tflops', digits: 1},
  bandwidth: {key: 'bandwidthGBs', digits: 0},
} as const

/**
 * One axis on the calibrated footing, for `plan` and `verify --perf` alike: peak x the host's measured fraction,
 * and the target's measured figure only where both sides are measured (else its datasheet figure).
 */
export function calibratedAxis(
  axis: ThroughputAxis,
  peak: number,
  fraction: number | null | undefined,
  datasheet: number | null,
  measured: number | undefined,
): {calibrated: number | null; target: number | null; targetAchieved: boolean} {
  const digits = THROUGHPUT_FIELDS[axis].digits
  const calibrated = fraction === null || fraction === undefined ? null : round(peak * fraction, digits)
  const targetAchieved = calibrated !== null && measured !== undefined && datasheet !== null
  return {calibrated, target: targetAchieved ? round(measured, digits) : datasheet, targetAchieved}
}

/** The target's measured figure per throughput axis (never an estimate): what a calibrated host is compared with. */
export function measuredTargetFigures(reference: TargetReference | undefined): Partial<Record<ThroughputAxis, number>> {
  if (!reference) return {}
  const pick = (r: TargetReference['fp32Tflops'] | null) => (r?.basis === 'measured' ? r.value : undefined)
  return {fp32: pick(reference.fp32Tflops), bf16: pick(reference.tensorTflops), bandwidth: pick(reference.copyGBs)}
}

export type Achievable = {
  /** what `verify --perf` holds the session to: the calibrated figures when there are any, else the peak */
  readonly basis: 'calibrated' | 'peak'
  readonly note: string
  readonly calibration: {readonly file: string; readonly driver: string; readonly measuredAt: string; readonly fractions: CalibrationFractions} | null
  /** peak x calibrated fraction; null where there is no calibrated fraction */
  readonly expected: {readonly fp32Tflops: number | null; readonly bf16Tflops: number | null; readonly bandwidthGBs: number | null}
  /** the target on the same footing: its measured figure where the catalog has one and this host is calibrated, else its datasheet figure */
  readonly target: {readonly fp32Tflops: number; readonly bf16Tflops: number | null; readonly bandwidthGBs: number}
  /** axes where both sides are achieved figures, so the error compares like with like */
  readonly targetAchieved: readonly ThroughputAxis[]
  /** signed percent, achievable vs achieved target; null where the two are not alike (use plan.errors: peak vs datasheet) */
  readonly errors: {readonly fp32Pct: number | null; readonly bf16Pct: number | null; readonly bandwidthPct: number | null}
}

/**
 * The plan's figures as this host really delivers them: datasheet peak x the fraction `calibrate` measured.
 * The planner itself chooses on peaks against the target's datasheet (like with like); this is what to expect.
 */
export function achievableFor(plan: Plan, lookup: CalibrationLookup, targetReference?: TargetReference): Achievable {
  const fractions = lookup.status === 'found' ? lookup.calibration.fractions : null
  const measured = measuredTargetFigures(targetReference)
  const axes = Object.fromEntries(
    THROUGHPUT_AXES.map((axis) => {
      const key = THROUGHPUT_FIELDS[axis].key
      return [axis, calibratedAxis(axis, plan.expected[key], fractions?.[axis], plan.target[key], measured[axis])]
    }),
  ) as Record<ThroughputAxis, ReturnType<typeof calibratedAxis>>
  const expected = {fp32Tflops: axes.fp32.calibrated, bf16Tflops: axes.bf16.calibrated, bandwidthGBs: axes.bandwidth.calibrated}
  const targetAchieved = THROUGHPUT_AXES.filter((axis) => axes[axis].targetAchieved)
  const target = {fp32Tflops: axes.fp32.target!, bf16Tflops: axes.bf16.target, bandwidthGBs: axes.bandwidth.target!}
  const error = (axis: ThroughputAxis): number | null => {
    const mine = expected[THROUGHPUT_FIELDS[axis].key]
    const theirs = target[THROUGHPUT_FIELDS[axis].key]
    return targetAchieved.includes(axis) && mine !== null && theirs !== null ? round(errorPct(mine, theirs)) : null
  }
  return {
    basis: fractions ? 'calibrated' : 'peak',
    note: noteFor(lookup),
    calibration:
      lookup.status === 'found'
        ? {file: lookup.file, driver: lookup.calibration.driver, measuredAt: lookup.calibration.measuredAt, fractions: lookup.calibration.fractions}
        : null,
    expected,
    target,
    targetAchieved,
    errors: {fp32Pct: error('fp32'), bf16Pct: error('bf16'), bandwidthPct: error('bandwidth')},
  }
}

function noteFor(lookup: CalibrationLookup): string {
  switch (lookup.status) {
    case 'found':
      return `achievable = peak x fractions measured by calibrate (${lookup.file}, driver ${lookup.calibration.driver}, ${lookup.calibration.measuredAt.slice(0, 10)})`
    case 'missing':
      return `no calibration for ${lookup.model} under driver ${lookup.driver}: expectations are datasheet peaks (measure them: gpu-cosplay calibrate)`
    case 'model':
      return 'planned against a catalog model: expectations are datasheet peaks (a calibration applies to a probed GPU)'
  }
}
