import type {HostModel, SmCurve} from '../catalog/types.js'
import {round} from '../core/units.js'
import type {CalibrationFractions} from '../host/calibration.js'
import {bf16TflopsAt, fp32TflopsAt} from './throughput.js'

/** A calibration of the probed GPU, as the planner gets it (the command edge reads the file). */
export type PlanCalibration = {readonly fractions: CalibrationFractions; readonly file: string; readonly driver: string}

type Axis = 'fp32' | 'bf16' | 'bandwidth'

/**
 * What this host delivers in the reference method, as a share of its datasheet peak per axis, and where that came from.
 * A slice's measured throughput is computed from its own SMs and clock with these (never copied from a target).
 */
export type HostRates = {
  /** measured / peak for the whole GPU at its maximum clock */
  readonly fraction: {readonly [A in Axis]: number}
  /** per-SM curves where a sweep measured them: a client's rate per SM depends on how many SMs draw power */
  readonly curves: {readonly fp32?: SmCurve; readonly bf16?: SmCurve}
  /** one line per axis: which figure, which method, which calibration */
  readonly sources: {readonly [A in Axis]: string}
  /** axes whose host figure is an estimate (the host's card has no measurement) */
  readonly estimated: readonly Axis[]
}

function wholePeak(model: HostModel): {[A in Axis]: number} {
  return {
    fp32: fp32TflopsAt(model, model.smCount, model.clockMaxMHz),
    bf16: bf16TflopsAt(model, model.smCount, model.clockMaxMHz),
    bandwidth: model.bandwidthGBs,
  }
}

/**
 * The host's rates: its card's reference (catalog, `measuredAs`), moved by a calibration of this very GPU where there
 * is one. A calibration is gpu_cosplay_perf.py's method: where the catalog has the card in that method too, the
 * calibration moves the reference by calibrated / catalog (like with like); where it has not, the calibrated share is
 * used as it is and the source says the method differs. Null when the host model names no card (no measured basis).
 */
export function hostRatesOf(model: HostModel, calibration: PlanCalibration | null = null): HostRates | null {
  const rates = model.measuredRates
  if (!rates) return null
  const peak = wholePeak(model)
  const ref = rates.reference
  const figure = {fp32: ref.fp32Tflops, bf16: ref.tensorTflops, bandwidth: ref.copyGBs}
  const samePerfMethod = {
    fp32: rates.cosplayPerf?.fp32Tflops ?? null,
    bf16: rates.cosplayPerf?.bf16Tflops ?? null,
    bandwidth: rates.cosplayPerf?.copyGBs ?? null,
  }
  const fraction = {} as {[A in Axis]: number}
  const sources = {} as {[A in Axis]: string}
  const estimated: Axis[] = []
  for (const axis of ['fp32', 'bf16', 'bandwidth'] as const) {
    const f = figure[axis]
    if (f === null) return null
    const catalogShare = f.value / peak[axis]
    const described = `${rates.card} ${f.basis === 'measured' ? 'measured' : 'estimated'} ${f.value} (${f.method})`
    if (f.basis === 'estimated') estimated.push(axis)
    const calibrated = calibration?.fractions[axis] ?? null
    const perf = samePerfMethod[axis]
    if (calibrated !== null && perf !== null) {
      fraction[axis] = catalogShare * (calibrated / (perf / peak[axis]))
      sources[axis] =
        `${described} x calibrated / catalog in gpu_cosplay_perf.py's method (${calibrated} / ${round(perf / peak[axis], 4)}, ${calibration!.file})`
    } else if (calibrated !== null) {
      fraction[axis] = calibrated
      sources[axis] =
        `calibration ${calibrated} of peak (${calibration!.file}), in gpu_cosplay_perf.py's method, not ${f.method}: the catalog has no ${rates.card} figure in that method to relate it to`
    } else {
      fraction[axis] = catalogShare
      sources[axis] = described
    }
  }
  const curve = (axis: 'fp32' | 'bf16') => model.smCurves?.find((c) => c.axis === axis)
  return {fraction, curves: {fp32: curve('fp32'), bf16: curve('bf16')}, sources, estimated}
}

/** TFLOPS per SM at `smCount`, interpolated linearly between the curve's points (flat beyond its ends). */
export function perSmTflops(curve: SmCurve, smCount: number): number {
  const points = curve.points
  if (smCount <= points[0][0]) return points[0][1] / points[0][0]
  for (let i = 1; i < points.length; i++) {
    const [s1, t1] = points[i]
    if (smCount <= s1) {
      const [s0, t0] = points[i - 1]
      const w = (smCount - s0) / (s1 - s0)
      return (t0 / s0) * (1 - w) + (t1 / s1) * w
    }
  }
  const [sLast, tLast] = points[points.length - 1]
  return tLast / sLast
}

/** How a client with `smCount` SMs fares per SM against the whole GPU (1 without a curve). */
function curveShare(curve: SmCurve | undefined, smCount: number, wholeSms: number): number {
  return curve ? perSmTflops(curve, smCount) / perSmTflops(curve, wholeSms) : 1
}

export type MeasuredFigures = {readonly fp32Tflops: number; readonly bf16Tflops: number; readonly bandwidthGBs: number}

/** What a slice measures: its datasheet arithmetic at its SMs and clock x the host's share x the per-SM curve. */
export function measuredAt(model: HostModel, rates: HostRates, smCount: number, clockMHz: number, bandwidthGBs: number): MeasuredFigures {
  return {
    fp32Tflops: round(fp32TflopsAt(model, smCount, clockMHz) * rates.fraction.fp32 * curveShare(rates.curves.fp32, smCount, model.smCount), 2),
    bf16Tflops: round(bf16TflopsAt(model, smCount, clockMHz) * rates.fraction.bf16 * curveShare(rates.curves.bf16, smCount, model.smCount), 1),
    bandwidthGBs: round(bandwidthGBs * rates.fraction.bandwidth, 0),
  }
}
