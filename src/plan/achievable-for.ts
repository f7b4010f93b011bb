import type {AchievedFraction} from '../catalog/types.js'
import {errorPct, round} from '../core/units.js'
import type {Calibration, CalibrationFractions} from '../host/calibration-file.js'
import type {Plan} from './types.js'

/** What the command edge found about a calibration for the planned GPU. */
export type CalibrationLookup =
  | {readonly status: 'found'; readonly file: string; readonly calibration: Calibration}
  | {readonly status: 'missing'; readonly model: string; readonly driver: string}
  /** planned against a catalog model (--on): there is no host GPU to have measured */
  | {readonly status: 'model'}

export const THROUGHPUT_AXES = ['fp32', 'bf16', 'bandwidth'] as const
export type ThroughputAxis = (typeof THROUGHPUT_AXES)[number]

export type Achievable = {
  /** what `verify --perf` holds the session to: the calibrated figures when there are any, else the peak */
  readonly basis: 'calibrated' | 'peak'
  readonly note: string
  readonly calibration: {readonly file: string; readonly driver: string; readonly measuredAt: string; readonly fractions: CalibrationFractions} | null
  /** peak x calibrated fraction; null where there is no calibrated fraction */
  readonly expected: {readonly fp32Tflops: number | null; readonly bf16Tflops: number | null; readonly bandwidthGBs: number | null}
  /** the target on the same footing: its achieved figure where the catalog has one and this host is calibrated, else its datasheet figure */
  readonly target: {readonly fp32Tflops: number; readonly bf16Tflops: number | null; readonly bandwidthGBs: number}
  /** axes where both sides are achieved figures, so the error compares like with like */
  readonly targetAchieved: readonly ThroughputAxis[]
  /** signed percent, achievable vs achieved target; null where the two are not alike (use plan.errors: peak vs datasheet) */
  readonly errors: {readonly fp32Pct: number | null; readonly bf16Pct: number | null; readonly bandwidthPct: number | null}
}

const PLAN_KEY = {fp32: 'fp32Tflops', bf16: 'bf16Tflops', bandwidth: 'bandwidthGBs'} as const

/**
 * The plan's figures as this host really delivers them: datasheet peak x the fraction `calibrate` measured.
 * The planner itself chooses on peaks against the target's datasheet (like with like); this is what to expect.
 */
export function achievableFor(plan: Plan, lookup: CalibrationLookup, targetFraction?: AchievedFraction): Achievable {
  const fractions = lookup.status === 'found' ? lookup.calibration.fractions : null
  const scaled = (axis: ThroughputAxis): number | null => {
    const f = fractions?.[axis]
    return f === null || f === undefined ? null : round(plan.expected[PLAN_KEY[axis]] * f, axis === 'bandwidth' ? 0 : 2)
  }
  const expected = {fp32Tflops: scaled('fp32'), bf16Tflops: scaled('bf16'), bandwidthGBs: scaled('bandwidth')}
  const targetAchieved = THROUGHPUT_AXES.filter((axis) => {
    const datasheet = plan.target[PLAN_KEY[axis]]
    return expected[PLAN_KEY[axis]] !== null && targetFraction?.[axis] !== undefined && datasheet !== null
  })
  const targetFigure = (axis: ThroughputAxis): number | null => {
    const datasheet = plan.target[PLAN_KEY[axis]]
    if (datasheet === null) return null
    return targetAchieved.includes(axis) ? round(datasheet * targetFraction![axis]!, axis === 'bandwidth' ? 0 : 2) : datasheet
  }
  const target = {fp32Tflops: targetFigure('fp32')!, bf16Tflops: targetFigure('bf16'), bandwidthGBs: targetFigure('bandwidth')!}
  const error = (axis: ThroughputAxis): number | null => {
    const mine = expected[PLAN_KEY[axis]]
    const theirs = target[PLAN_KEY[axis]]
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
