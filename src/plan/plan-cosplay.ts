import {METHOD_LABELS} from '../catalog/measure-methods.js'
import type {Target} from '../catalog/types.js'
import {StateError} from '../core/errors.js'
import {errorPct, round} from '../core/units.js'
import {type HostRates, hostRatesOf, type MeasuredFigures, measuredAt} from './measured-throughput.js'
import {memoryPlan} from './memory-limits.js'
import {bf16TflopsAt, fp32TflopsAt, migBandwidthGBs, supportedClocksMHz} from './throughput.js'
import {MPS_MIN_SMS_WHOLE_GPU, type MpsLevel, mpsLevels} from './mps-shaping.js'
import {planScore} from './plan-score.js'
import type {
  Expected,
  GpuWideRequest,
  MeasuredPlan,
  Objective,
  Plan,
  PlanBasis,
  PlanConstraints,
  PlanHost,
  PlanOptions,
  ProfileOption,
  TargetSummary,
} from './types.js'
import {explainPlan} from './warnings.js'

/** A slice (or the whole GPU) the plan could run on. */
type Shape = {
  readonly profile: ProfileOption | null
  readonly smCount: number
  readonly memoryGiB: number
  readonly bandwidthGBs: number
}

/** The three throughput axes as one side of a comparison: what a slice has, or what a target wants. */
type Figures = {readonly fp32Tflops: number; readonly bf16Tflops: number; readonly bandwidthGBs: number}
/** What the plan aims at: tensor null when the target has no tensor cores; fp16 when it has them but no BF16. */
type Wanted = {readonly fp32Tflops: number; readonly tensorTflops: number | null; readonly tensorAxis: 'bf16' | 'fp16-tensor'; readonly bandwidthGBs: number}

type Candidate = {
  readonly shape: Shape
  readonly clockMHz: number
  /** SMs the session gets: the slice's, or fewer under MPS */
  readonly mps: MpsLevel | null
  /** datasheet arithmetic */
  readonly expected: Expected
  /** what it measures, where the host has measured rates */
  readonly measured: MeasuredFigures | null
  /** log error on the objective */
  readonly primary: number
  /** balanced error plus slice size: decides between candidates the objective cannot tell apart */
  readonly secondary: number
}

/**
 * Clocks step 15 MHz, so two slices can land 1% apart on the objective by rounding alone. Within this
 * window they count as equal, but never past 2.5%, so that a reachable objective stays within 3%.
 */
const EQUIVALENT_LOG_ERROR = 0.01
const EQUIVALENT_CEILING = 0.025
/** Among equivalent candidates a smaller slice wins, leaving the rest of the GPU to teammates. */
const SLICE_WEIGHT = 0.05
/** Which GPU-wide settings a session on this shape takes, and why. */
type GpuWide = {readonly clockLock: boolean; readonly powerLimit: boolean; readonly reason: string}

/**
 * Chooses a MIG profile, the SMs within it (MPS), a clock and a power cap so that the host imitates the
 * target as closely as the objective asks. Pure: everything it needs is in its arguments.
 *
 * GPU-wide knobs (clock lock, power limit) bind every tenant of the GPU, so with MPS they are used only by a
 * session that holds the whole GPU, or when asked for; a slice is shaped by its MPS percentage at the clock
 * in force. Without MPS on the host they shape every session, as before.
 */
export function planCosplay(
  target: Target,
  host: PlanHost,
  objective: Objective = 'balanced',
  constraints: PlanConstraints = {},
  request: PlanOptions = {},
): Plan {
  const shapes = candidateShapes(target, host)
  const rates = hostRatesOf(host.model, host.calibration ?? null)
  const {basis, basisNote} = basisFor(target, rates, request.basis)
  const want = basis === 'measured' ? measuredWant(target) : datasheetWant(target)
  const candidates: Candidate[] = []
  for (const shape of shapes.options) {
    const gpuWide = gpuWideFor(host, shape, request)
    const levels: (MpsLevel | null)[] = host.mpsAvailable ? mpsLevels(shape.smCount, shape.profile === null ? MPS_MIN_SMS_WHOLE_GPU : undefined) : [null]
    for (const clockMHz of clockChoices(host, constraints, gpuWide.clockLock)) {
      for (const mps of levels) {
        const smCount = mps?.smCount ?? shape.smCount
        const expected = expectedFor(target, host, shape, smCount, clockMHz)
        const measured = rates && measuredAt(host.model, rates, smCount, clockMHz, shape.bandwidthGBs)
        const have = basis === 'measured' && measured ? measured : expected
        candidates.push({
          shape,
          clockMHz,
          mps,
          expected,
          measured,
          primary: objectiveError(objective, want, have),
          secondary: objectiveError('balanced', want, have) + SLICE_WEIGHT * sliceFraction(host, shape),
        })
      }
    }
  }

  // candidateShapes never returns an empty list; it throws instead.
  const chosen = pickCandidate(candidates, host, objective, want, basis)
  const gpuWide = gpuWideFor(host, chosen.shape, request)
  const powerLimitW = gpuWide.powerLimit ? (constraints.powerLimitW ?? clamp(target.tdpW, host.powerRangeW.min, host.powerRangeW.max)) : null
  const lockedClockMHz = !gpuWide.clockLock
    ? null
    : constraints.clockMHz !== undefined
      ? constraints.clockMHz
      : chosen.clockMHz === host.clockRangeMHz.max
        ? null
        : chosen.clockMHz
  const summary = summarise(target)
  const errors = {
    fp32Pct: round(errorPct(chosen.expected.fp32Tflops, target.fp32Tflops)),
    bf16Pct: target.bf16Tflops === null ? null : round(errorPct(chosen.expected.bf16Tflops, target.bf16Tflops)),
    bandwidthPct: round(errorPct(chosen.expected.bandwidthGBs, target.bandwidthGBs)),
    vramPct: round(errorPct(chosen.expected.vramGB, target.vramGB)),
  }
  const profile = chosen.shape.profile
  const vramCapMiB = Math.round(chosen.expected.vramGB * 1024)
  const memory = memoryPlan(target, host.model, vramCapMiB, Math.round(chosen.shape.memoryGiB * 1024), {
    mps: chosen.mps !== null,
    migSlice: profile !== null,
  })
  const measured = rates && chosen.measured ? measuredPlan(target, host, rates, chosen.measured) : null
  const have = basis === 'measured' && chosen.measured ? chosen.measured : chosen.expected
  const plan: Omit<Plan, 'warnings'> = {
    target: summary,
    host: {name: host.name, index: host.index, model: host.model.key, smCount: host.model.smCount},
    objective,
    mig: profile && {
      profile: profile.name,
      profileId: profile.id,
      smCount: profile.smCount,
      memoryGiB: profile.memoryGiB,
      memorySlices: profile.memorySlices,
    },
    needsMigEnable: profile !== null && !host.migEnabled,
    smCount: chosen.mps?.smCount ?? chosen.shape.smCount,
    clockMHz: lockedClockMHz,
    effectiveClockMHz: chosen.clockMHz,
    powerLimitW,
    mps: chosen.mps && {
      activeThreadPercentage: chosen.mps.activeThreadPercentage,
      smCount: chosen.mps.smCount,
      pinnedMemLimitMiB: memory.hardLimitMiB!,
    },
    gpuWide,
    vramCapGiB: chosen.expected.vramGB,
    vramCapMiB,
    expected: chosen.expected,
    errors,
    basis,
    basisNote,
    measured,
    memory,
    weighed: weighedAxes(objective, want, have),
  }
  return {...plan, warnings: explainPlan(target, host, plan, shapes.tooBigForAnySlice, constraints)}
}

/** The measured basis needs both sides measured (or estimated): the target's reference and the host's rates. */
function basisFor(target: Target, rates: HostRates | null, asked: PlanBasis | undefined): {basis: PlanBasis; basisNote: string} {
  if (asked === 'datasheet') return {basis: 'datasheet', basisNote: 'asked for (--datasheet): datasheet peaks against the datasheet, as before'}
  if (!target.reference)
    return {basis: 'datasheet', basisNote: `${target.key} has no reference (a catalog loaded without one): datasheet peaks against its datasheet`}
  if (!rates) return {basis: 'datasheet', basisNote: 'this host model names no measured card (measuredAs): datasheet peaks against the datasheet'}
  const estimated = [
    target.reference.fp32Tflops.basis === 'estimated' && 'FP32',
    target.reference.tensorTflops?.basis === 'estimated' && 'tensor',
    target.reference.copyGBs.basis === 'estimated' && 'copy',
  ].filter(Boolean)
  const axisName = {fp32: 'FP32', bf16: 'BF16', bandwidth: 'copy'} as const
  const hostEstimated =
    rates.estimated.length > 0 ? `; this host's ${rates.estimated.map((a) => axisName[a]).join(', ')} rates are estimated (its card has no measurement)` : ''
  return {
    basis: 'measured',
    basisNote:
      (estimated.length === 0
        ? `what the card measures (${METHOD_LABELS['matmul-best-of-sizes']}), with what this host measures`
        : `what the card measures, estimated from its datasheet for ${estimated.join(', ')} (no measurement), with what this host measures`) + hostEstimated,
  }
}

function datasheetWant(target: Target): Wanted {
  return {
    fp32Tflops: target.fp32Tflops,
    tensorTflops: tensorTargetTflops(target),
    tensorAxis: target.bf16Tflops === null ? 'fp16-tensor' : 'bf16',
    bandwidthGBs: target.bandwidthGBs,
  }
}

function measuredWant(target: Target): Wanted {
  const r = target.reference!
  return {
    fp32Tflops: r.fp32Tflops.value,
    tensorTflops: r.tensorTflops?.value ?? null,
    tensorAxis: target.bf16Tflops === null ? 'fp16-tensor' : 'bf16',
    bandwidthGBs: r.copyGBs.value,
  }
}

function measuredPlan(target: Target, host: PlanHost, rates: HostRates, have: MeasuredFigures): MeasuredPlan | null {
  const r = target.reference
  const hostCopy = host.model.measuredRates?.reference.copyGBs.method
  if (!r || !hostCopy) return null
  return {
    expected: have,
    target: {fp32Tflops: r.fp32Tflops.value, bf16Tflops: r.tensorTflops?.value ?? null, bandwidthGBs: r.copyGBs.value},
    targetBasis: {fp32: r.fp32Tflops.basis, bf16: r.tensorTflops?.basis ?? null, bandwidth: r.copyGBs.basis},
    errors: {
      fp32Pct: round(errorPct(have.fp32Tflops, r.fp32Tflops.value)),
      bf16Pct: r.tensorTflops ? round(errorPct(have.bf16Tflops, r.tensorTflops.value)) : null,
      bandwidthPct: round(errorPct(have.bandwidthGBs, r.copyGBs.value)),
    },
    methods: {gemm: r.fp32Tflops.method, targetCopy: r.copyGBs.method, hostCopy},
    hostRates: rates.sources,
    targetSources: {fp32: r.fp32Tflops.source, bf16: r.tensorTflops?.source ?? null, bandwidth: r.copyGBs.source},
  }
}

function gpuWideFor(host: PlanHost, shape: Shape, request: GpuWideRequest): GpuWide {
  if (!host.mpsAvailable) return {clockLock: true, powerLimit: true, reason: 'no MPS on this host: the clock and power limit (GPU-wide) shape this session'}
  const totalSlices = host.model.mig?.memorySlices
  const wholeGpu = shape.profile === null || (totalSlices !== undefined && shape.profile.memorySlices >= totalSlices)
  if (wholeGpu) return {clockLock: true, powerLimit: true, reason: 'the session holds the whole GPU, so the GPU-wide clock and power limit are its own'}
  const asked = [request.lockClock && 'the clock lock', request.capPower && 'the power limit'].filter(Boolean)
  return {
    clockLock: request.lockClock === true,
    powerLimit: request.capPower === true,
    reason:
      asked.length > 0
        ? `asked for ${asked.join(' and ')}, which bind every tenant of this GPU`
        : 'a slice is shaped by MPS inside it; the GPU-wide clock and power limit are left to the whole GPU',
  }
}

/**
 * A session takes no more of the GPU than it needs: the smallest slice that gets the objective within
 * EQUIVALENT_CEILING wins, or, under MPS (whose SM steps can be coarser than that), the smallest slice
 * whose SMs span the target on the matched axis. Within that slice, candidates within
 * EQUIVALENT_LOG_ERROR of its best count as equal and the balanced error decides.
 */
function pickCandidate(candidates: readonly Candidate[], host: PlanHost, objective: Objective, want: Wanted, basis: PlanBasis): Candidate {
  const best = Math.min(...candidates.map((c) => c.primary))
  const bySize = [...new Set(candidates.map((c) => sliceFraction(host, c.shape)))].sort((a, b) => a - b)
  const spans = (pool: readonly Candidate[]) => {
    const wanted = axisTarget(objective, want)
    if (!host.mpsAvailable || wanted === null) return false
    const values = pool.map((c) => axisValue(objective, basis === 'measured' && c.measured ? c.measured : c.expected))
    return Math.max(...values) >= wanted * (1 - EQUIVALENT_CEILING) && Math.min(...values) <= wanted * (1 + EQUIVALENT_CEILING)
  }
  let pool = candidates
  for (const size of bySize) {
    const ofSize = candidates.filter((c) => sliceFraction(host, c.shape) === size)
    // under MPS a smaller slice that already gives the best any slice gives is enough (a bigger one would only span)
    const bestHere = host.mpsAvailable && ofSize.some((c) => c.primary <= best + 1e-12)
    if ((best <= EQUIVALENT_CEILING && ofSize.some((c) => c.primary <= EQUIVALENT_CEILING + 1e-12)) || bestHere || spans(ofSize)) {
      pool = ofSize
      break
    }
  }
  const poolBest = Math.min(...pool.map((c) => c.primary))
  const window = Math.max(poolBest, Math.min(poolBest + EQUIVALENT_LOG_ERROR, EQUIVALENT_CEILING)) + 1e-12
  return pool.filter((c) => c.primary <= window).reduce((a, b) => (b.secondary < a.secondary - 1e-12 ? b : a))
}

/** The one axis an fp32 or bf16 objective matches (null for the others, which weigh several or none the SMs move). */
function axisTarget(objective: Objective, want: Wanted): number | null {
  if (objective === 'fp32') return want.fp32Tflops
  if (objective === 'bf16') return want.tensorTflops
  return null
}

function axisValue(objective: Objective, have: Figures): number {
  return objective === 'fp32' ? have.fp32Tflops : have.bf16Tflops
}

/** The axes objectiveError weighs for this objective, with their signed errors. */
function weighedAxes(objective: Objective, want: Wanted, have: Figures): Plan['weighed'] {
  const axis = (name: Plan['weighed'][number]['axis'], mine: number, theirs: number) => ({
    axis: name,
    expected: mine,
    target: theirs,
    errorPct: round(errorPct(mine, theirs)),
  })
  const fp32 = axis('fp32', have.fp32Tflops, want.fp32Tflops)
  const bandwidth = axis('bandwidth', have.bandwidthGBs, want.bandwidthGBs)
  const tensor = want.tensorTflops === null ? null : axis(want.tensorAxis, have.bf16Tflops, want.tensorTflops)
  switch (objective) {
    case 'fp32':
      return [fp32]
    case 'bf16':
      return [tensor ?? fp32]
    case 'bandwidth':
      // The SM clock does not move bandwidth; the secondary (balanced) score picks the clock.
      return [bandwidth]
    case 'balanced':
      return tensor === null ? [fp32, bandwidth] : [fp32, tensor, bandwidth]
  }
}

function summarise(target: Target): TargetSummary {
  return {
    key: target.key,
    name: target.name,
    fp32Tflops: target.fp32Tflops,
    bf16Tflops: target.bf16Tflops,
    bandwidthGBs: target.bandwidthGBs,
    vramGB: target.vramGB,
    tdpW: target.tdpW,
  }
}

function candidateShapes(target: Target, host: PlanHost): {options: Shape[]; tooBigForAnySlice: boolean} {
  const {model} = host
  if (host.profiles === null) {
    const whole: Shape = {smCount: model.smCount, memoryGiB: model.memoryGiB, bandwidthGBs: model.bandwidthGBs, profile: null}
    return {options: [whole], tooBigForAnySlice: model.memoryGiB < target.vramGB}
  }

  const toShape = (profile: ProfileOption): Shape => ({
    profile,
    smCount: profile.smCount,
    memoryGiB: profile.memoryGiB,
    bandwidthGBs: migBandwidthGBs(model, profile.memorySlices),
  })
  // The costume caps VRAM at the target's size in GiB, as nvidia-smi shows such a card (24 GB -> 24576 MiB).
  const fitting = host.profiles.filter((p) => p.memoryGiB >= target.vramGB)
  if (fitting.length === 0) {
    const largest = [...host.profiles].sort((a, b) => b.memoryGiB - a.memoryGiB || b.smCount - a.smCount)
    const freeLargest = largest.filter((p) => p.free > 0 && p.memoryGiB === largest[0].memoryGiB)
    if (freeLargest.length === 0) throw noFreeSlot(target, host)
    return {options: freeLargest.map(toShape), tooBigForAnySlice: true}
  }

  const free = fitting.filter((p) => p.free > 0)
  if (free.length === 0) throw noFreeSlot(target, host)
  return {options: free.map(toShape), tooBigForAnySlice: false}
}

function noFreeSlot(target: Target, host: PlanHost): StateError {
  const where = host.index === null ? host.name : `GPU ${host.index}`
  const freeList = (host.profiles ?? []).filter((p) => p.free > 0).map((p) => `${p.name} x${p.free}`)
  const freeText = freeList.length > 0 ? `free: ${freeList.join(', ')}` : 'no slot is free'
  return new StateError('MIG_NO_FREE_SLOT', `${where} has no free MIG slice that holds ${target.vramGB} GiB (${freeText})`, {
    fix: ['see who holds the slices: gpu-cosplay status', 'or pick another GPU with --host-gpu N'],
  })
}

/** The clock in force for a session that takes no clock lock; the whole grid for one that may lock it. */
function clockChoices(host: PlanHost, constraints: PlanConstraints, mayLock: boolean): number[] {
  if (constraints.clockMHz === null) return [host.clockRangeMHz.max]
  if (constraints.clockMHz !== undefined) return [constraints.clockMHz]
  return mayLock ? supportedClocksMHz(host.clockRangeMHz) : [host.clockRangeMHz.max]
}

function expectedFor(target: Target, host: PlanHost, shape: Shape, smCount: number, clockMHz: number): Expected {
  return {
    fp32Tflops: round(fp32TflopsAt(host.model, smCount, clockMHz), 2),
    bf16Tflops: round(bf16TflopsAt(host.model, smCount, clockMHz), 1),
    bandwidthGBs: round(shape.bandwidthGBs, 0),
    vramGB: round(Math.min(shape.memoryGiB, target.vramGB), 2),
  }
}

function sliceFraction(host: PlanHost, shape: Shape): number {
  const total = host.model.mig?.memorySlices
  return shape.profile && total ? shape.profile.memorySlices / total : 1
}

function tensorTargetTflops(target: Target): number | null {
  return target.bf16Tflops ?? target.fp16Tflops
}

/** The planner's score of one candidate: the same function that ranks boxes, over the axes the objective weighs. */
function objectiveError(objective: Objective, want: Wanted, have: Figures): number {
  return planScore({weighed: weighedAxes(objective, want, have)})
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value))
}
