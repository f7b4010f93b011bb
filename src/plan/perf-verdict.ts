import {METHOD_LABELS, type MeasureMethod} from '../catalog/measure-methods.js'
import type {AxisReference, HostMeasuredRates, TargetReference} from '../catalog/types.js'
import {errorPct, round} from '../core/units.js'
import type {CalibrationFractions} from '../host/calibration.js'
import type {PerfMeasurement, PerfSamples} from '../host/perf-measurement.js'
import {calibratedAxis, measuredTargetFigures, THROUGHPUT_FIELDS, type ThroughputAxis} from './achievable-for.js'
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
/** An axis's verdict (a band with a warning, unlike a check's Verdict), in the order verify --perf counts them. */
export const PERF_VERDICTS = ['PASS', 'WARN', 'FAIL', 'SKIP'] as const
export type PerfVerdict = (typeof PERF_VERDICTS)[number]

/** What the real card measures on an axis, how, and where that comes from. */
export type CardReference = Pick<AxisReference, 'value' | 'basis' | 'method' | 'source'>

export type AxisReport = {
  readonly measured: number | null
  readonly unit: string
  /** what the plan computed from datasheet arithmetic for this slice and clock */
  readonly expectedPeak: number | null
  /** expectedPeak x the fraction `calibrate` measured on this GPU model and driver; null without a calibration */
  readonly expectedCalibrated: number | null
  /**
   * the plan's measured expectation (its SMs and clock x this host's measured rates) restated in this measurement's
   * method; VRAM: what the plan says a program can allocate. Null for a plan without one, or where the host's card has
   * no figure in this method to restate it by
   */
  readonly expectedMeasured: number | null
  /** the target's datasheet figure (its measured one where the catalog has it and this host is calibrated) */
  readonly target: number | null
  /** what the real card measures (or its estimate), by the method named beside it; VRAM: what it reports to CUDA */
  readonly reference: CardReference | null
  /** signed percent, this session's measurement against the real card's (methods differ where `reference.method` does) */
  readonly vsReferencePct: number | null
  readonly verdict: PerfVerdict
}

/** What the session's plan promised; read from the GPU book's session.plan. */
export type PerfExpectations = {
  readonly hostModel: string
  readonly targetKey: string
  readonly peak: {readonly fp32Tflops: number; readonly bf16Tflops: number; readonly bandwidthGBs: number; readonly vramGiB: number}
  readonly target: {readonly fp32Tflops: number; readonly bf16Tflops: number | null; readonly bandwidthGBs: number; readonly vramGB: number}
  /** the SM clock the peak assumes (plan.effectiveClockMHz); compute expectations scale to the clock observed below it */
  readonly effectiveClockMHz?: number
  /** the plan put a limit below the libraries (an MPS pinned limit, or a MIG slice the size of the cap) */
  readonly hardCapPlanned?: boolean
  /** the plan's measured expectation (reference method), where the plan has one */
  readonly measured?: {readonly fp32Tflops: number; readonly bf16Tflops: number; readonly bandwidthGBs: number}
  /** what the plan says a program can allocate (GiB), where it says so */
  readonly allocatableGiB?: number
  /** the host model's tensor clock (its tensor peaks are quoted at it); BF16 runs no faster above it */
  readonly tensorClockMaxMHz?: number
}

/** Below this share of the planned clock, compute expectations are scaled to the clock observed while timing. */
export const CLOCK_SCALE_BELOW = 0.98

export type PerfReport = {
  readonly device: {readonly name: string; readonly kind: 'cuda' | 'cpu'; readonly driver: string | null}
  readonly axes: {readonly [A in PerfAxis]: AxisReport}
  readonly samples: PerfSamples
  readonly expectation: {
    /** what the verdicts compare with: the plan's measured expectation, else peak x calibration, else the peak */
    readonly basis: 'measured' | 'calibrated' | 'peak'
    /** how this session measured (gpu_cosplay_perf.py), beside the card's reference methods */
    readonly method: MeasureMethod
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
    /** the driver refused an allocation past the limit (MIG slice, MPS limit); null when it could not tell */
    readonly hard: boolean | null
    /** the plan meant the cap to be hard (MPS pinned limit, or a MIG slice the size of the cap) */
    readonly hardPlanned: boolean
    /** why hard is what it is (the driver's answer), and why a soft cap warns */
    readonly note: string | null
  } | null
  /** the SM clock while each compute axis was timed, and the factor its expectation was scaled by (1: not scaled) */
  readonly clock: {
    readonly plannedMHz: number | null
    readonly observedMHz: {readonly fp32: number | null; readonly bf16: number | null}
    readonly factor: {readonly fp32: number; readonly bf16: number}
  }
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
export function expectationsFromPlan(
  plan: Pick<Plan, 'host' | 'target' | 'expected' | 'effectiveClockMHz' | 'mps' | 'mig' | 'vramCapGiB' | 'measured' | 'memory'>,
): PerfExpectations {
  return {
    hostModel: plan.host.model,
    effectiveClockMHz: plan.effectiveClockMHz,
    hardCapPlanned: plan.mps !== null || (plan.mig !== null && Math.abs(plan.mig.memoryGiB - plan.vramCapGiB) < 1),
    ...(plan.measured ? {measured: plan.measured.expected} : {}),
    ...(plan.memory ? {allocatableGiB: round(plan.memory.allocatableMiB / 1024, 3)} : {}),
    targetKey: plan.target.key,
    peak: {fp32Tflops: plan.expected.fp32Tflops, bf16Tflops: plan.expected.bf16Tflops, bandwidthGBs: plan.expected.bandwidthGBs, vramGiB: plan.expected.vramGB},
    target: {fp32Tflops: plan.target.fp32Tflops, bf16Tflops: plan.target.bf16Tflops, bandwidthGBs: plan.target.bandwidthGBs, vramGB: plan.target.vramGB},
  }
}

/** The method gpu_cosplay_perf.py measures by, in a session and in `calibrate`. */
export const SESSION_METHOD: MeasureMethod = 'cosplay-perf'

/**
 * Per axis, how this host's card measures by a method like the session's against the method of the plan's measured
 * expectation (its catalog figures in both): what restates the expectation in the session's method. For BF16 the MPS
 * sweep's 8192^3 median comes first: it ran at the clock in force, while the whole-GPU gpu_cosplay_perf.py run held a
 * 1.5 s window under the power cap (676 at 1492 MHz), and the clock a session observes already scales its
 * expectation. Null where the catalog lacks such a figure (the measured expectation is then not held to the session).
 */
export function sessionMethodRatio(host: HostMeasuredRates | undefined): {readonly [A in ThroughputAxis]: number | null} {
  const ref = host?.reference
  const perf = host?.cosplayPerf
  const ratio = (reference: AxisReference | null | undefined, session: number | null | undefined): number | null => {
    if (!reference || reference.basis !== 'measured') return null
    if (reference.method === SESSION_METHOD) return 1
    return session === null || session === undefined ? null : session / reference.value
  }
  return {
    fp32: ratio(ref?.fp32Tflops, perf?.fp32Tflops),
    bf16: ratio(ref?.tensorTflops, host?.sweep?.bf16Tflops ?? perf?.bf16Tflops),
    bandwidth: ratio(ref?.copyGBs, perf?.copyGBs),
  }
}

/**
 * Measured vs expected (the plan's measured expectation, else peak x calibration, else peak) per axis, with verdicts,
 * and beside each the real card's reference by its own method. A CPU run (tests, or a session without a GPU) is
 * reported with every verdict SKIP: its figures say nothing about the GPU.
 */
export function perfReport(
  m: PerfMeasurement,
  e: PerfExpectations,
  calibration: CalibrationFractions | null,
  targetReference?: TargetReference,
  hostRates?: HostMeasuredRates,
): PerfReport {
  const measuredTarget = measuredTargetFigures(targetReference)
  const isCpu = m.device.kind === 'cpu'
  const ratio = sessionMethodRatio(hostRates)
  const restated = (axis: ThroughputAxis): number | null => {
    const r = ratio[axis]
    return e.measured && r !== null ? round(e.measured[THROUGHPUT_FIELDS[axis].key] * r, THROUGHPUT_FIELDS[axis].digits) : null
  }
  const references = {
    fp32: targetReference?.fp32Tflops ?? null,
    bf16: targetReference?.tensorTflops ?? null,
    bandwidth: targetReference?.copyGBs ?? null,
  }
  const basis = (['fp32', 'bf16', 'bandwidth'] as const).some((a) => restated(a) !== null) ? 'measured' : calibration ? 'calibrated' : 'peak'
  const targetAchieved: PerfAxis[] = []
  const observedMHz = {fp32: observedClock(m, 'fp32'), bf16: observedClock(m, 'bf16')}
  // tensor work runs no faster above the tensor clock (1830 MHz on H100/H200 SXM): count the clock only below it
  const tensorCap = (mhz: number | null | undefined) => (mhz === null || mhz === undefined ? mhz : Math.min(mhz, e.tensorClockMaxMHz ?? mhz))
  const factor = {
    fp32: clockFactor(observedMHz.fp32, e.effectiveClockMHz),
    bf16: clockFactor(tensorCap(observedMHz.bf16) ?? null, tensorCap(e.effectiveClockMHz) ?? undefined),
  }
  const throughput = (axis: ThroughputAxis): AxisReport => {
    const a = m.axes[axis]
    const key = THROUGHPUT_FIELDS[axis].key
    const peak = e.peak[key]
    const {calibrated, target, targetAchieved: alike} = calibratedAxis(axis, peak, calibration?.[axis], e.target[key], measuredTarget[axis])
    if (alike) targetAchieved.push(axis)
    const expectedMeasured = restated(axis)
    // a session whose clock others' power draw holds down is held to the figure at the clock it actually ran at
    const expected = (expectedMeasured ?? calibrated ?? peak) * (axis === 'bandwidth' ? 1 : factor[axis])
    let verdict: PerfVerdict
    if (isCpu || a.skipped !== undefined) verdict = 'SKIP'
    else if (a.measured === null) verdict = 'FAIL'
    else verdict = bandVerdict(a.measured, expected)
    const reference = references[axis] && cardReference(references[axis])
    const vsReferencePct = !isCpu && reference && a.measured !== null ? round(errorPct(a.measured, reference.value)) : null
    return {
      measured: a.measured,
      unit: a.unit,
      expectedPeak: peak,
      expectedCalibrated: calibrated,
      expectedMeasured,
      target,
      reference,
      vsReferencePct,
      verdict,
    }
  }
  const v = m.axes.vram
  let vramVerdict: PerfVerdict
  if (isCpu || v.skipped !== undefined) vramVerdict = 'SKIP'
  else if (v.error !== undefined || v.measured === null || v.overCapRefused === false) vramVerdict = 'FAIL'
  // what a program can allocate, as the plan has it (the card's context comes out of its memory), else the cap
  else vramVerdict = bandVerdict(v.measured, e.allocatableGiB ?? e.peak.vramGiB)
  const hardPlanned = e.hardCapPlanned ?? false
  const softWhereHard = hardPlanned && v.hard === false
  if (softWhereHard && vramVerdict === 'PASS') vramVerdict = 'WARN'
  const hardReason = typeof v.hardReason === 'string' ? v.hardReason : null
  const capNote = softWhereHard
    ? `the plan set a hard limit (MPS pinned limit or MIG slice), but the driver granted memory past it${hardReason ? `: ${hardReason}` : ''}`
    : hardReason
  const cudaTotal = targetReference?.totalMemoryMiB ?? null
  const vramReference = cudaTotal && {...cardReference(cudaTotal), value: round(cudaTotal.value / 1024, 3)}
  const vram: AxisReport = {
    measured: v.measured,
    unit: v.unit,
    expectedPeak: e.peak.vramGiB,
    expectedCalibrated: calibration ? e.peak.vramGiB : null,
    expectedMeasured: e.allocatableGiB ?? null,
    target: e.target.vramGB,
    reference: vramReference,
    // what a program got here against all the card reports (on the card its context comes out of that too)
    vsReferencePct: !isCpu && vramReference && v.measured !== null ? round(errorPct(v.measured, vramReference.value)) : null,
    verdict: vramVerdict,
  }
  const axes = {fp32: throughput('fp32'), bf16: throughput('bf16'), bandwidth: throughput('bandwidth'), vram}
  return {
    device: {name: m.device.name, kind: m.device.kind, driver: m.device.driver},
    axes,
    samples: m.samples,
    expectation: {basis, method: SESSION_METHOD, targetAchieved, note: noteFor(isCpu, basis, references)},
    vramCap: isCpu
      ? null
      : {
          capGiB: v.capGiB ?? null,
          underCapOk: v.underCapOk ?? null,
          overCapRefused: v.overCapRefused ?? null,
          cupyRefused: typeof v.cupy?.libraryRefused === 'boolean' ? v.cupy.libraryRefused : null,
          hard: v.hard ?? null,
          hardPlanned,
          note: capNote,
        },
    clock: {plannedMHz: e.effectiveClockMHz ?? null, observedMHz, factor},
  }
}

function observedClock(m: PerfMeasurement, axis: 'fp32' | 'bf16'): number | null {
  if (m.device.kind !== 'cuda') return null
  return m.samples.summary?.byAxis?.[axis]?.smClockMHz?.median ?? null
}

function clockFactor(observedMHz: number | null, plannedMHz: number | undefined): number {
  if (observedMHz === null || plannedMHz === undefined || !(plannedMHz > 0) || !(observedMHz > 0)) return 1
  const ratio = observedMHz / plannedMHz
  return ratio < CLOCK_SCALE_BELOW ? Math.round(ratio * 1000) / 1000 : 1
}

function cardReference(r: AxisReference): CardReference {
  return {value: r.value, basis: r.basis, method: r.method, source: r.source}
}

function noteFor(isCpu: boolean, basis: PerfReport['expectation']['basis'], references: Record<ThroughputAxis, AxisReference | null>): string {
  if (isCpu) return 'CPU run: torch saw no CUDA device, so these are CPU figures and every verdict is SKIP'
  const bands = `PASS within ${PASS_WITHIN * 100}%, WARN within ${WARN_WITHIN * 100}%, FAIL beyond`
  const methods = [...new Set(Object.values(references).flatMap((r) => (r ? [r.method] : [])))]
  const card =
    methods.length === 0
      ? ''
      : `; the card's figures are by ${methods.map((m) => METHOD_LABELS[m]).join(' / ')}, this session's by ${METHOD_LABELS[SESSION_METHOD]}` +
        (methods.every((m) => m === SESSION_METHOD) ? '' : ' (a method apart: an H200 reads 790 TFLOPS BF16 by the first, 676 by the second)')
  switch (basis) {
    case 'measured':
      return `verdicts compare with the plan's measured expectation, restated in this session's method: ${bands}${card}`
    case 'calibrated':
      return `verdicts compare with the calibrated expectation: ${bands}${card}`
    case 'peak':
      return `no calibration: verdicts compare with datasheet peaks (${bands}), which a GPU rarely reaches; run gpu-cosplay calibrate${card}`
  }
}
