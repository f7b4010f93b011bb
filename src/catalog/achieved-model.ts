import {COPY_METHODS_BY_PREFERENCE, REFERENCE_GEMM_METHOD} from './measure-methods.js'
import type {Measurement, Target} from './types.js'

/**
 * What holds a card back from its datasheet, fitted on the cards that were measured, to estimate those that were not.
 *
 * Datasheet peaks assume the boost clock on every SM. Under load a card holds the clock its power limit allows:
 * dynamic power goes with clock x voltage^2 and the voltage with the clock, so the sustained clock follows the cube
 * root of the power an SM may draw. With x = TDP per SM-GHz at boost (for tensor work, per unit of the SM's tensor
 * rate), measured / datasheet = k x min(1, x / x0)^(1/3): k is what cuBLAS reaches when power is not the limit (one
 * per class: a GeForce SM's FP32 lanes share an issue port with integer work, a V100/T4/A100 SM's do not; GeForce runs
 * FP32-accumulate tensor work at half rate, so it draws less power per datasheet FLOP), x0 the knee below which a
 * card cannot hold its boost clock. A 70 W T4 (1.1 W per SM-GHz) measures about half its FP32 datasheet, a 450 W
 * RTX 4090 (1.4) about two thirds.
 *
 * Pure: the catalog's own measured entries in, parameters out. leave-one-out tells how far it carries.
 */
export type AchievedClass = 'fp32-128' | 'fp32-256' | 'tensor-half-rate' | 'tensor-full-rate'

export type AxisFit = {
  /** W per SM-GHz (per 512 tensor FLOP/clk for tensor work) below which the card cannot hold its boost clock */
  readonly kneeWPerSmGHz: number
  /** measured / datasheet where power is not the limit, per class */
  readonly k: Readonly<Partial<Record<AchievedClass, number>>>
  /** the cards it was fitted on */
  readonly cards: number
}

export type AchievedModel = {
  readonly fp32: AxisFit
  readonly tensor: AxisFit
  /** measured copy / datasheet bandwidth, the median over cards measured with the reference copy method */
  readonly copy: {readonly fraction: number; readonly cards: number}
}

/** The figures an estimate gives for one card. */
export type AchievedEstimate = {readonly fp32Tflops: number; readonly tensorTflops: number | null; readonly copyGBs: number}

const TENSOR_REFERENCE_RATE = 512
const KNEE_GRID = Array.from({length: 200}, (_, i) => 0.1 + i * 0.025)

/** FLOPs per SM per clock the datasheet figure implies (an FMA counts 2). */
function perSmClk(tflops: number, t: Target): number {
  return (tflops * 1e6) / (t.smCount * t.boostClockMHz)
}

/** The tensor figure a target is matched on: BF16, or FP16 where the card has no BF16 (Volta, Turing). */
export function tensorDatasheet(t: Target): number | null {
  return t.bf16Tflops ?? t.fp16Tflops
}

/** The measured entry's figure a target's tensor axis reads: BF16, or FP16 for a card without BF16. */
export function tensorFigure(t: Target): 'bf16Tflops' | 'fp16Tflops' | null {
  return t.bf16Tflops !== null ? 'bf16Tflops' : t.fp16Tflops !== null ? 'fp16Tflops' : null
}

function classOf(axis: 'fp32' | 'tensor', t: Target): AchievedClass | null {
  if (axis === 'fp32') return perSmClk(t.fp32Tflops, t) < 192 ? 'fp32-128' : 'fp32-256'
  const ds = tensorDatasheet(t)
  if (ds === null) return null
  return perSmClk(ds, t) < 768 ? 'tensor-half-rate' : 'tensor-full-rate'
}

/** The power an SM may draw at boost, W per SM-GHz; for tensor work per 512 FLOP/clk of its tensor rate. */
export function powerPerSmGHz(axis: 'fp32' | 'tensor', t: Target): number | null {
  const perSm = t.tdpW / (t.smCount * (t.boostClockMHz / 1000))
  if (axis === 'fp32') return perSm
  const ds = tensorDatasheet(t)
  return ds === null ? null : perSm / (perSmClk(ds, t) / TENSOR_REFERENCE_RATE)
}

export type MeasuredFigure = 'fp32Tflops' | 'tf32Tflops' | 'bf16Tflops' | 'fp16Tflops' | 'copyGBs' | 'totalMemoryMiB' | 'contextMiB'

/** The first measured entry of `methods` (in that order) that gives `figure`. */
export function measuredEntry(t: Target, figure: MeasuredFigure, methods: readonly string[]): Measurement | null {
  for (const method of methods) {
    const entry = (t.measured ?? []).find((m) => m.method === method && m[figure] !== undefined)
    if (entry) return entry
  }
  return null
}

type Sample = {readonly x: number; readonly fraction: number; readonly klass: AchievedClass}

function samplesOf(axis: 'fp32' | 'tensor', targets: readonly Target[]): Sample[] {
  return targets.flatMap((t) => {
    const figure = axis === 'fp32' ? 'fp32Tflops' : tensorFigure(t)
    const ds = axis === 'fp32' ? t.fp32Tflops : tensorDatasheet(t)
    const klass = classOf(axis, t)
    const x = powerPerSmGHz(axis, t)
    if (figure === null || ds === null || klass === null || x === null) return []
    const entry = measuredEntry(t, figure, [REFERENCE_GEMM_METHOD])
    const value = entry?.[figure]
    return value === undefined ? [] : [{x, fraction: value / ds, klass}]
  })
}

const sustained = (x: number, knee: number) => Math.min(1, x / knee) ** (1 / 3)

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** The knee with the least squared log error; k per class is the median of measured / (datasheet x sustained share). */
function fitAxis(samples: readonly Sample[]): AxisFit {
  if (samples.length === 0) return {kneeWPerSmGHz: KNEE_GRID[0], k: {}, cards: 0}
  let best: {error: number; fit: AxisFit} | null = null
  for (const knee of KNEE_GRID) {
    const k: Partial<Record<AchievedClass, number>> = {}
    for (const klass of new Set(samples.map((s) => s.klass))) {
      k[klass] = median(samples.filter((s) => s.klass === klass).map((s) => s.fraction / sustained(s.x, knee)))
    }
    const error = samples.reduce((sum, s) => sum + Math.log((k[s.klass]! * sustained(s.x, knee)) / s.fraction) ** 2, 0)
    // strictly better only: the grid ascends, so ties keep the lower knee (deterministic)
    if (best === null || error < best.error - 1e-12) best = {error, fit: {kneeWPerSmGHz: Math.round(knee * 1000) / 1000, k, cards: samples.length}}
  }
  return best!.fit
}

/** Fits the model on every target with measured figures in the reference methods. */
export function fitAchievedModel(targets: readonly Target[]): AchievedModel {
  const copies = targets.flatMap((t) => {
    const entry = measuredEntry(t, 'copyGBs', [COPY_METHODS_BY_PREFERENCE[0]])
    return entry?.copyGBs === undefined ? [] : [entry.copyGBs / t.bandwidthGBs]
  })
  return {
    fp32: fitAxis(samplesOf('fp32', targets)),
    tensor: fitAxis(samplesOf('tensor', targets)),
    copy: {fraction: copies.length > 0 ? median(copies) : 1, cards: copies.length},
  }
}

function estimateAxis(axis: 'fp32' | 'tensor', t: Target, fit: AxisFit): number | null {
  const ds = axis === 'fp32' ? t.fp32Tflops : tensorDatasheet(t)
  const klass = classOf(axis, t)
  const x = powerPerSmGHz(axis, t)
  if (ds === null || klass === null || x === null) return null
  // a class no measured card is in borrows the median of the others
  const k = fit.k[klass] ?? median(Object.values(fit.k))
  return ds * k * sustained(x, fit.kneeWPerSmGHz)
}

/** What the model expects the card to measure, from its datasheet alone. */
export function estimateAchieved(t: Target, model: AchievedModel): AchievedEstimate {
  return {
    fp32Tflops: round2(estimateAxis('fp32', t, model.fp32)!),
    tensorTflops: tensorDatasheet(t) === null ? null : round2(estimateAxis('tensor', t, model.tensor)!),
    copyGBs: Math.round(t.bandwidthGBs * model.copy.fraction),
  }
}

/** How the estimate was made, for a reference's `source`. */
export function estimateSource(model: AchievedModel, axis: 'fp32' | 'tensor' | 'copy'): string {
  if (axis === 'copy')
    return `estimate: datasheet bandwidth x ${model.copy.fraction.toFixed(3)}, the median copy / datasheet of ${model.copy.cards} measured cards`
  const fit = model[axis]
  const ks = Object.entries(fit.k)
    .map(([klass, k]) => `${klass} ${k!.toFixed(3)}`)
    .join(', ')
  return `estimate: datasheet x k x min(1, W per SM-GHz / ${fit.kneeWPerSmGHz})^(1/3), k ${ks}; fitted on ${fit.cards} measured cards`
}

export type LeaveOneOutRow = {
  readonly key: string
  readonly name: string
  readonly fp32: {readonly datasheet: number; readonly measured: number; readonly estimate: number; readonly errorPct: number} | null
  readonly tensor: {
    readonly datasheet: number
    readonly measured: number
    readonly estimate: number
    readonly errorPct: number
    readonly figure: 'bf16' | 'fp16'
  } | null
}

/** Each measured card estimated by the model fitted on all the others: how far the estimate carries to a card without measurements. */
export function leaveOneOut(targets: readonly Target[]): LeaveOneOutRow[] {
  const measured = targets.filter((t) => samplesOf('fp32', [t]).length > 0 || samplesOf('tensor', [t]).length > 0)
  return measured.map((t) => {
    const model = fitAchievedModel(targets.filter((o) => o.key !== t.key))
    const estimate = estimateAchieved(t, model)
    const figure = tensorFigure(t)
    const fp32 = measuredEntry(t, 'fp32Tflops', [REFERENCE_GEMM_METHOD])?.fp32Tflops
    const tensor = figure === null ? undefined : measuredEntry(t, figure, [REFERENCE_GEMM_METHOD])?.[figure]
    const pct = (e: number, m: number) => Math.round((e / m - 1) * 1000) / 10
    return {
      key: t.key,
      name: t.name,
      fp32: fp32 === undefined ? null : {datasheet: t.fp32Tflops, measured: fp32, estimate: estimate.fp32Tflops, errorPct: pct(estimate.fp32Tflops, fp32)},
      tensor:
        tensor === undefined || estimate.tensorTflops === null || figure === null
          ? null
          : {
              datasheet: tensorDatasheet(t)!,
              measured: tensor,
              estimate: estimate.tensorTflops,
              errorPct: pct(estimate.tensorTflops, tensor),
              figure: figure === 'bf16Tflops' ? 'bf16' : 'fp16',
            },
    }
  })
}

function round2(value: number): number {
  return Math.round(value * 100) / 100
}
