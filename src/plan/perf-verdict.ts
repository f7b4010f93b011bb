import type {AchievedFraction} from '../catalog/types.js'
import type {CalibrationFractions} from '../host/calibration-file.js'
import type {PerfMeasurement, PerfSamples} from '../host/perf-measurement.js'
import {calibratedAxis, THROUGHPUT_FIELDS, type ThroughputAxis} from './achievable-for.js'
import type {Plan} from './types.js'

/**
 * The one place that turns measurements into verdicts (gpu_cosplay_perf.py only measures). A measurement
 * within PASS_WITHIN of what the plan promised passes, within WARN_WITHIN warns, beyond fails. Either
 * direction counts: a cosplay that runs much faster than promised imitates the target as badly as a slow one.
 */
export const PASS_WITHIN = 0.1
export const WARN_WITHIN = 0.25

export const PERF_AXES = ['fp32', 'bf16', 'bandwidth', 'vram'] as const
export type PerfAxis = (typeof PERF_AXES)[number]
export type PerfVerdict = 'PASS' | 'WARN' | 'FAIL' | 'SKIP'

export type AxisReport = {
  readonly measured: number | null
  readonly unit: string
  /** what the plan computed from datasheet arithmetic for this slice and clock */
  readonly expectedPeak: number | null
  /** expectedPeak x the fraction `calibrate` measured on this GPU model and driver; null without a calibration */
  readonly expectedCalibrated: number | null
  /** the target's figure (its achieved one where the catalog has it and this host is calibrated) */
  readonly target: number | null
  readonly verdict: PerfVerdict
}

/** What the session's plan promised; read from the GPU book's session.plan. */
export type PerfExpectations = {
  readonly hostModel: string
  readonly targetKey: string
  readonly peak: {readonly fp32Tflops: number; readonly bf16Tflops: number; readonly bandwidthGBs: number; readonly vramGiB: number}
  readonly target: {readonly fp32Tflops: number; readonly bf16Tflops: number | null; readonly bandwidthGBs: number; readonly vramGB: number}
}

export type PerfReport = {
  readonly device: {readonly name: string; readonly kind: 'cuda' | 'cpu'; readonly driver: string | null}
  readonly axes: {readonly [A in PerfAxis]: AxisReport}
  readonly samples: PerfSamples
  readonly expectation: {
    /** what the verdicts compare with */
    readonly basis: 'calibrated' | 'peak'
    /** axes whose target figure is the target's achieved one (compared like with like) */
    readonly targetAchieved: readonly PerfAxis[]
    readonly note: string
  }
  /** how the VRAM cap held; null on a CPU run */
  readonly vramCap: {
    readonly capGiB: number | null
    readonly underCapOk: boolean | null
    readonly overCapRefused: boolean | null
    /** CuPy (its pool limit, CUPY_GPU_MEMORY_LIMIT) refused one GiB past the cap; null without CuPy */
    readonly cupyRefused: boolean | null
    /** a raw allocation past the cap was refused below the libraries (MIG slice, MPS limit); null without CuPy */
    readonly hard: boolean | null
  } | null
}

export function deviation(measured: number, expected: number): number {
  return Math.abs(measured / expected - 1)
}

/** The band a measurement falls in; the epsilon keeps a figure that lands exactly on 10% in PASS. */
export function bandVerdict(measured: number, expected: number): 'PASS' | 'WARN' | 'FAIL' {
  if (!(expected > 0)) return 'FAIL'
  const d = deviation(measured, expected)
  return d <= PASS_WITHIN + 1e-9 ? 'PASS' : d <= WARN_WITHIN + 1e-9 ? 'WARN' : 'FAIL'
}

/** What a session's plan promised, as verify --perf holds the measurement to it (the book's plan is already checked). */
export function expectationsFromPlan(plan: Pick<Plan, 'host' | 'target' | 'expected'>): PerfExpectations {
  return {
    hostModel: plan.host.model,
    targetKey: plan.target.key,
    peak: {fp32Tflops: plan.expected.fp32Tflops, bf16Tflops: plan.expected.bf16Tflops, bandwidthGBs: plan.expected.bandwidthGBs, vramGiB: plan.expected.vramGB},
    target: {fp32Tflops: plan.target.fp32Tflops, bf16Tflops: plan.target.bf16Tflops, bandwidthGBs: plan.target.bandwidthGBs, vramGB: plan.target.vramGB},
  }
}

/**
 * Measured vs expected (peak, calibrated) vs target per axis, with verdicts. A CPU run (tests, or a session
 * without a GPU) is reported with every verdict SKIP: its figures say nothing about the GPU.
 */
export function perfReport(m: PerfMeasurement, e: PerfExpectations, calibration: CalibrationFractions | null, targetFraction?: AchievedFraction): PerfReport {
  const isCpu = m.device.kind === 'cpu'
  const basis = calibration ? 'calibrated' : 'peak'
  const targetAchieved: PerfAxis[] = []
  const throughput = (axis: ThroughputAxis): AxisReport => {
    const a = m.axes[axis]
    const key = THROUGHPUT_FIELDS[axis].key
    const peak = e.peak[key]
    const {calibrated, target, targetAchieved: alike} = calibratedAxis(axis, peak, calibration?.[axis], e.target[key], targetFraction?.[axis])
    if (alike) targetAchieved.push(axis)
    const expected = calibrated ?? peak
    let verdict: PerfVerdict
    if (isCpu || a.skipped !== undefined) verdict = 'SKIP'
    else if (a.measured === null) verdict = 'FAIL'
    else verdict = bandVerdict(a.measured, expected)
    return {measured: a.measured, unit: a.unit, expectedPeak: peak, expectedCalibrated: calibrated, target, verdict}
  }
  const v = m.axes.vram
  let vramVerdict: PerfVerdict
  if (isCpu || v.skipped !== undefined) vramVerdict = 'SKIP'
  else if (v.error !== undefined || v.measured === null || v.overCapRefused === false) vramVerdict = 'FAIL'
  else vramVerdict = bandVerdict(v.measured, e.peak.vramGiB)
  const vram: AxisReport = {
    measured: v.measured,
    unit: v.unit,
    expectedPeak: e.peak.vramGiB,
    expectedCalibrated: calibration ? e.peak.vramGiB : null,
    target: e.target.vramGB,
    verdict: vramVerdict,
  }
  const axes = {fp32: throughput('fp32'), bf16: throughput('bf16'), bandwidth: throughput('bandwidth'), vram}
  return {
    device: {name: m.device.name, kind: m.device.kind, driver: m.device.driver},
    axes,
    samples: m.samples,
    expectation: {basis, targetAchieved, note: noteFor(isCpu, basis)},
    vramCap: isCpu
      ? null
      : {
          capGiB: v.capGiB ?? null,
          underCapOk: v.underCapOk ?? null,
          overCapRefused: v.overCapRefused ?? null,
          cupyRefused: typeof v.cupy?.libraryRefused === 'boolean' ? v.cupy.libraryRefused : null,
          hard: v.hard ?? null,
        },
  }
}

function noteFor(isCpu: boolean, basis: 'calibrated' | 'peak'): string {
  if (isCpu) return 'CPU run: torch saw no CUDA device, so these are CPU figures and every verdict is SKIP'
  return basis === 'calibrated'
    ? `verdicts compare with the calibrated expectation: PASS within ${PASS_WITHIN * 100}%, WARN within ${WARN_WITHIN * 100}%, FAIL beyond`
    : `no calibration: verdicts compare with datasheet peaks (PASS within ${PASS_WITHIN * 100}%, WARN within ${WARN_WITHIN * 100}%), which a GPU rarely reaches; run gpu-cosplay calibrate`
}
