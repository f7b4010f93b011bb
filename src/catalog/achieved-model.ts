import {COPY_METHODS_BY_PREFERENCE, REFERENCE_GEMM_METHOD} from './measure-methods.js'
import type {Arch, Measurement, Target} from './types.js'

/**
 * What holds a card back from its datasheet, fitted on the cards that were measured, to estimate those that were not.
 *
 * A datasheet peak assumes the boost clock on every SM. Under a large GEMM the clock settles where the power limit
 * allows: dynamic power goes with clock x voltage^2 and the voltage with the clock, so the sustained clock goes as the
 * cube root of the power an SM may draw, relative to what an SM-cycle of that work costs (an exponent fitted freely
 * comes out at 0.36 and estimates no better; 1/3 is kept). That cost is not the same on every card. It falls with the
 * process the chip is made on (the energy of a switch goes with its capacitance): TSMC 12 nm (Volta, Turing), Samsung
 * 8 nm (Ampere GA10x), TSMC 7 nm (GA100), TSMC 4 nm (Ada, Hopper, Blackwell). And it grows with what the SM does per
 * clock, less than in proportion (wider units share the issue, register and shared-memory traffic). So
 *
 *   p = TDP / (SMs x boost GHz) / ((process nm / 4)^a x (datasheet FLOP per SM-clock / base)^d)
 *   measured / datasheet = k(class) x min(1, p / knee)^(1/3)
 *
 * with base 128 for FP32 (64 FMA lanes) and 512 for tensor work (the FP32-accumulate rate of a GeForce SM, which runs
 * it at half rate: it draws less per datasheet FLOP and holds its clock where a data-center SM of the same
 * architecture does not). a and d are one pair for both axes; k is per class, the median (in logs) of what the cards of
 * that class reach at the knee: an SM that issues each FP32 warp instruction over two clocks to 64 lanes (Volta, Turing,
 * GA100) reaches more of its datasheet than one whose 128 lanes share that issue port with everything else; tensor work
 * is one class. knee is the highest p among the fitted cards: none of them shows its clock stop rising with power, so
 * the estimate does not go past the most power-rich card measured. Fitted: a and d (a grid, least squared log error)
 * and three k, from 57 figures of 29 cards; the 1/3, the process table and the bases are not fitted, and nothing is
 * per card. On the measured cards a = 0.46 and d = 0.64: a 70 W T4 (12 nm, 1.1 W per SM-GHz) and a 72 W L4 (4 nm,
 * 0.6) both measure about half their FP32 datasheet, a 450 W RTX 4090 about two thirds.
 *
 * leaveOneOut tells how far it carries (docs/fidelity.md): each card estimated by the model refitted without it lands
 * within 20% of its BF16/FP16 measurement on all 28 cards, and within 10% of its FP32 on 22 of 29. The FP32 misses:
 * the RTX 4060 and 4060 Ti 16GB (+29%, +36%) are one row each that measures 52-55% of its FP32 datasheet where the
 * other Ada GeForce cards measure 66-70%, with their own BF16 rows normal (and a 4060 laptop row in the same source
 * measures more than the desktop one): nothing in a datasheet says so. The T4 (+28%) is the only power-limited Turing
 * card, and its FP32 falls further than its FP16 tensor work (54% against 65% of datasheet; its tensor estimate lands
 * within 1%): the cards it is estimated from show no 12 nm FP32 datapath at its power. The rest are pairs that measure
 * alike where their datasheets differ: an RTX 3060 Ti (-13%) measures what a 3070 with 21% more SMs does, a 5080
 * (+12%) what a 5070 Ti (-10%) does with 28% more datasheet (its BF16 row is low too), and a 2070 (-11%) measures
 * more than its datasheet.
 *
 * Pure: the catalog's own measured entries in, parameters out.
 */
export type AchievedClass = 'fp32-128' | 'fp32-256' | 'tensor'
const CLASSES: readonly AchievedClass[] = ['fp32-128', 'fp32-256', 'tensor']

export type AxisFit = {
  /** the highest p (W per SM-GHz, normalised by process and width) among the fitted cards: the estimate stops there */
  readonly knee: number
  /** measured / datasheet at the knee, per class */
  readonly k: Readonly<Partial<Record<AchievedClass, number>>>
  /** the cards it was fitted on */
  readonly cards: number
}

export type AchievedModel = {
  /** a: what an SM-cycle costs goes with (process nm / 4)^a */
  readonly processExponent: number
  /** d: ... and with (datasheet FLOP per SM-clock / base)^d */
  readonly widthExponent: number
  readonly fp32: AxisFit
  readonly tensor: AxisFit
  /** measured copy / datasheet bandwidth, the median over cards measured with the reference copy method */
  readonly copy: {readonly fraction: number; readonly cards: number}
}

/** The figures an estimate gives for one card. */
export type AchievedEstimate = {readonly fp32Tflops: number; readonly tensorTflops: number | null; readonly copyGBs: number}

type Axis = 'fp32' | 'tensor'
type Exponents = {readonly processExponent: number; readonly widthExponent: number}

/**
 * The process (nm, as NVIDIA names it) each architecture's chips are made on; a chip on another one is named below.
 * From NVIDIA's architecture whitepapers: Tesla V100 (Volta, TSMC 12 nm FFN), Turing (TSMC 12 nm FFN), A100 Tensor Core
 * GPU (GA100, TSMC 7 nm N7), Ampere GA102 (Samsung 8 nm 8N), Ada Lovelace (TSMC 4N), H100 Tensor Core GPU (TSMC 4N),
 * Blackwell (TSMC 4NP, counted as 4).
 */
const PROCESS_NM: Readonly<Record<Arch, number>> = {volta: 12, turing: 12, ampere: 8, ada: 4, hopper: 4, blackwell: 4}
const CHIP_PROCESS_NM: Readonly<Record<string, number>> = {GA100: 7}
const REFERENCE_NM = 4
/** datasheet FLOP per SM-clock that counts as width 1 */
const BASE_WIDTH: Readonly<Record<Axis, number>> = {fp32: 128, tensor: 512}
/**
 * a and d from 0 to 1.5: first in steps of 0.1, then in steps of 0.02 within 0.1 of the best coarse pair (a fit runs on
 * every catalog load with user files, and 29 times for leave one out; the full fine grid gives the same pair here)
 */
const EXPONENT_MAX = 1.5
const COARSE_STEP = 0.1
const FINE_STEP = 0.02
const CLOCK_EXPONENT = 1 / 3

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

function datasheetOf(axis: Axis, t: Target): number | null {
  return axis === 'fp32' ? t.fp32Tflops : tensorDatasheet(t)
}

function classOf(axis: Axis, t: Target): AchievedClass | null {
  if (axis === 'tensor') return tensorDatasheet(t) === null ? null : 'tensor'
  return perSmClk(t.fp32Tflops, t) < 192 ? 'fp32-128' : 'fp32-256'
}

/** The process the card's chip is made on, nm. */
export function processNm(t: Target): number {
  return CHIP_PROCESS_NM[t.chip] ?? PROCESS_NM[t.arch]
}

/** The power an SM may draw at boost, W per SM-GHz. */
export function powerPerSmGHz(t: Target): number {
  return t.tdpW / (t.smCount * (t.boostClockMHz / 1000))
}

/** The datasheet's FLOP per SM-clock on an axis, relative to its base (FP32 128, tensor 512). */
function widthOf(axis: Axis, t: Target): number | null {
  const ds = datasheetOf(axis, t)
  return ds === null ? null : perSmClk(ds, t) / BASE_WIDTH[axis]
}

/** p: the power an SM may draw relative to what an SM-cycle of the axis's work costs on this card. */
export function workPower(axis: Axis, t: Target, e: Exponents): number | null {
  const width = widthOf(axis, t)
  if (width === null) return null
  return powerPerSmGHz(t) / ((processNm(t) / REFERENCE_NM) ** e.processExponent * width ** e.widthExponent)
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

/** One measured figure in logs: log p = logW - a x logProcess - d x logWidth, computed per exponent pair. */
type Sample = {
  readonly logW: number
  readonly logProcess: number
  readonly logWidth: number
  readonly logFraction: number
  readonly klass: AchievedClass
}

/** The measured figures of an axis as samples. */
function samplesOf(axis: Axis, targets: readonly Target[]): Sample[] {
  return targets.flatMap((t) => {
    const figure = axis === 'fp32' ? 'fp32Tflops' : tensorFigure(t)
    const ds = datasheetOf(axis, t)
    const klass = classOf(axis, t)
    const width = widthOf(axis, t)
    if (figure === null || ds === null || klass === null || width === null) return []
    const value = measuredEntry(t, figure, [REFERENCE_GEMM_METHOD])?.[figure]
    const process = processNm(t) / REFERENCE_NM
    return value === undefined
      ? []
      : [{logW: Math.log(powerPerSmGHz(t)), logProcess: Math.log(process), logWidth: Math.log(width), logFraction: Math.log(value / ds), klass}]
  })
}

/** The share of its boost clock a card holds: the cube root of its p relative to the knee, at most 1. */
const sustained = (p: number, knee: number) => Math.min(1, p / knee) ** CLOCK_EXPONENT

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/**
 * knee: the highest p fitted; log k per class: the median of log(measured / (datasheet x sustained share)); and the
 * squared log error. In logs and plain loops: the grid calls this thousands of times per fit.
 */
function fitAxis(samples: readonly Sample[], e: Exponents): {fit: AxisFit; error: number} {
  if (samples.length === 0) return {fit: {knee: 1, k: {}, cards: 0}, error: 0}
  const logShare = new Array<number>(samples.length)
  let logKnee = -Infinity
  for (let i = 0; i < samples.length; i++) {
    const s = samples[i]
    logShare[i] = s.logW - e.processExponent * s.logProcess - e.widthExponent * s.logWidth
    if (logShare[i] > logKnee) logKnee = logShare[i]
  }
  for (let i = 0; i < samples.length; i++) logShare[i] = CLOCK_EXPONENT * Math.min(0, logShare[i] - logKnee)
  const logK: Partial<Record<AchievedClass, number>> = {}
  for (const klass of CLASSES) {
    const residuals: number[] = []
    for (let i = 0; i < samples.length; i++) if (samples[i].klass === klass) residuals.push(samples[i].logFraction - logShare[i])
    if (residuals.length > 0) logK[klass] = median(residuals)
  }
  let error = 0
  for (let i = 0; i < samples.length; i++) error += (logK[samples[i].klass]! + logShare[i] - samples[i].logFraction) ** 2
  const k: Partial<Record<AchievedClass, number>> = {}
  for (const klass of CLASSES) if (logK[klass] !== undefined) k[klass] = Math.exp(logK[klass])
  return {fit: {knee: Math.exp(logKnee), k, cards: samples.length}, error}
}

/**
 * Fits the model on every target with measured figures in the reference method: a and d on the grid with the least
 * squared log error over both axes together, and for each pair the knee and k of each axis.
 */
export function fitAchievedModel(targets: readonly Target[]): AchievedModel {
  const copies = targets.flatMap((t) => {
    const entry = measuredEntry(t, 'copyGBs', [COPY_METHODS_BY_PREFERENCE[0]])
    return entry?.copyGBs === undefined ? [] : [entry.copyGBs / t.bandwidthGBs]
  })
  const fp32Samples = samplesOf('fp32', targets)
  const tensorSamples = samplesOf('tensor', targets)
  type Best = {error: number; e: Exponents; fp32: AxisFit; tensor: AxisFit}
  const search = (as: readonly number[], ds: readonly number[]): Best => {
    let best: Best | null = null
    for (const processExponent of as) {
      for (const widthExponent of ds) {
        const e = {processExponent, widthExponent}
        const fp32 = fitAxis(fp32Samples, e)
        const tensor = fitAxis(tensorSamples, e)
        const error = fp32.error + tensor.error
        // strictly better only: the grids ascend, so ties keep the smaller exponents (deterministic)
        if (best === null || error < best.error - 1e-12) best = {error, e, fp32: fp32.fit, tensor: tensor.fit}
      }
    }
    return best!
  }
  const coarse = search(steps(0, EXPONENT_MAX, COARSE_STEP), steps(0, EXPONENT_MAX, COARSE_STEP))
  const around = (x: number) => steps(Math.max(0, x - COARSE_STEP), Math.min(EXPONENT_MAX, x + COARSE_STEP), FINE_STEP)
  const best = search(around(coarse.e.processExponent), around(coarse.e.widthExponent))
  return {
    ...best.e,
    fp32: best.fp32,
    tensor: best.tensor,
    copy: {fraction: copies.length > 0 ? median(copies) : 1, cards: copies.length},
  }
}

/** from, from + step, ... up to `to`, rounded to the step (no drift from repeated adding) */
function steps(from: number, to: number, step: number): number[] {
  const n = Math.round((to - from) / step)
  return Array.from({length: n + 1}, (_, i) => Math.round((from + i * step) / step) * step).map((x) => Math.round(x * 1000) / 1000)
}

function estimateAxis(axis: Axis, t: Target, model: AchievedModel): number | null {
  const ds = datasheetOf(axis, t)
  const klass = classOf(axis, t)
  const p = workPower(axis, t, model)
  if (ds === null || klass === null || p === null) return null
  const fit = model[axis]
  // a class no measured card is in borrows the median of the others
  const k = fit.k[klass] ?? median(Object.values(fit.k))
  return ds * k * sustained(p, fit.knee)
}

/** What the model expects the card to measure, from its datasheet alone. */
export function estimateAchieved(t: Target, model: AchievedModel): AchievedEstimate {
  return {
    fp32Tflops: round2(estimateAxis('fp32', t, model)!),
    tensorTflops: tensorDatasheet(t) === null ? null : round2(estimateAxis('tensor', t, model)!),
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
  const a = model.processExponent.toFixed(2)
  const d = model.widthExponent.toFixed(2)
  return (
    `estimate: datasheet x k x min(1, p / ${fit.knee.toFixed(3)})^(1/3), p = W per SM-GHz / ((process nm / 4)^${a} x (FLOP per SM-clock / ${BASE_WIDTH[axis]})^${d}), ` +
    `k ${ks}; fitted on ${fit.cards} measured cards`
  )
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
