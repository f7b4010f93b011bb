import type {Target} from '../catalog/types.js'
import {StateError} from '../core/errors.js'
import {errorPct, round} from '../core/units.js'
import {bf16TflopsAt, fp32TflopsAt, migBandwidthGBs, supportedClocksMHz} from './throughput.js'
import type {Expected, Objective, Plan, PlanConstraints, PlanHost, ProfileOption, TargetSummary} from './types.js'
import {explainPlan} from './warnings.js'

/** A slice (or the whole GPU) the plan could run on. */
type Shape = {
  readonly profile: ProfileOption | null
  readonly smCount: number
  readonly memoryGiB: number
  readonly bandwidthGBs: number
}

type Candidate = {
  readonly shape: Shape
  readonly clockMHz: number
  readonly expected: Expected
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

/**
 * Chooses a MIG profile, a clock and a power cap so that the host imitates the target as closely as the
 * objective asks. Pure: everything it needs is in its arguments.
 */
export function planCosplay(
  target: Target,
  host: PlanHost,
  objective: Objective = 'balanced',
  constraints: PlanConstraints = {},
): Plan {
  const shapes = candidateShapes(target, host)
  const clocks = clockChoices(host, constraints)
  const candidates: Candidate[] = []
  for (const shape of shapes.options) {
    for (const clockMHz of clocks) {
      const expected = expectedFor(target, host, shape, clockMHz)
      candidates.push({
        shape,
        clockMHz,
        expected,
        primary: objectiveError(objective, target, expected),
        secondary: objectiveError('balanced', target, expected) + SLICE_WEIGHT * sliceFraction(host, shape),
      })
    }
  }

  // candidateShapes never returns an empty list; it throws instead.
  const chosen = pickCandidate(candidates)
  const powerLimitW = constraints.powerLimitW ?? clamp(target.tdpW, host.powerRangeW.min, host.powerRangeW.max)
  const lockedClockMHz = constraints.clockMHz !== undefined ? constraints.clockMHz : chosen.clockMHz === host.clockRangeMHz.max ? null : chosen.clockMHz
  const summary = summarise(target)
  const errors = {
    fp32Pct: round(errorPct(chosen.expected.fp32Tflops, target.fp32Tflops)),
    bf16Pct: target.bf16Tflops === null ? null : round(errorPct(chosen.expected.bf16Tflops, target.bf16Tflops)),
    bandwidthPct: round(errorPct(chosen.expected.bandwidthGBs, target.bandwidthGBs)),
    vramPct: round(errorPct(chosen.expected.vramGB, target.vramGB)),
  }
  const profile = chosen.shape.profile
  const plan: Omit<Plan, 'warnings'> = {
    target: summary,
    host: {name: host.name, index: host.index, model: host.model.key},
    objective,
    mig: profile && {
      profile: profile.name,
      profileId: profile.id,
      smCount: profile.smCount,
      memoryGiB: profile.memoryGiB,
      memorySlices: profile.memorySlices,
    },
    needsMigEnable: profile !== null && !host.migEnabled,
    smCount: chosen.shape.smCount,
    clockMHz: lockedClockMHz,
    effectiveClockMHz: chosen.clockMHz,
    powerLimitW,
    mps: null,
    gpuWide: {clockLock: lockedClockMHz !== null, powerLimit: true, reason: 'the clock and power limit shape this session (GPU-wide)'},
    vramCapGiB: chosen.expected.vramGB,
    vramCapMiB: Math.round(chosen.expected.vramGB * 1024),
    expected: chosen.expected,
    errors,
  }
  return {...plan, warnings: explainPlan(target, host, plan, shapes.tooBigForAnySlice, constraints)}
}

function pickCandidate(candidates: readonly Candidate[]): Candidate {
  const best = Math.min(...candidates.map((c) => c.primary))
  const window = Math.max(best, Math.min(best + EQUIVALENT_LOG_ERROR, EQUIVALENT_CEILING)) + 1e-12
  return candidates
    .filter((c) => c.primary <= window)
    .reduce((a, b) => (b.secondary < a.secondary - 1e-12 ? b : a))
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

function clockChoices(host: PlanHost, constraints: PlanConstraints): number[] {
  if (constraints.clockMHz === null) return [host.clockRangeMHz.max]
  if (constraints.clockMHz !== undefined) return [constraints.clockMHz]
  return supportedClocksMHz(host.clockRangeMHz)
}

function expectedFor(target: Target, host: PlanHost, shape: Shape, clockMHz: number): Expected {
  return {
    fp32Tflops: round(fp32TflopsAt(host.model, shape.smCount, clockMHz), 2),
    bf16Tflops: round(bf16TflopsAt(host.model, shape.smCount, clockMHz), 1),
    bandwidthGBs: round(shape.bandwidthGBs, 0),
    vramGB: round(Math.min(shape.memoryGiB, target.vramGB), 2),
  }
}

function sliceFraction(host: PlanHost, shape: Shape): number {
  const total = host.model.mig?.memorySlices
  return shape.profile && total ? shape.profile.memorySlices / total : 1
}

/** Log ratios make 2x too fast and 2x too slow equally bad. */
function logError(actual: number, wanted: number): number {
  return Math.abs(Math.log(actual / wanted))
}

function tensorTargetTflops(target: Target): number | null {
  return target.bf16Tflops ?? target.fp16Tflops
}

function objectiveError(objective: Objective, target: Target, expected: Expected): number {
  const fp32 = logError(expected.fp32Tflops, target.fp32Tflops)
  const bandwidth = logError(expected.bandwidthGBs, target.bandwidthGBs)
  const tensorWanted = tensorTargetTflops(target)
  const tensor = tensorWanted === null ? null : logError(expected.bf16Tflops, tensorWanted)
  switch (objective) {
    case 'fp32':
      return fp32
    case 'bf16':
      return tensor ?? fp32
    case 'bandwidth':
      // The SM clock does not move bandwidth; the secondary (balanced) error picks the clock.
      return bandwidth
    case 'balanced': {
      const axes = tensor === null ? [fp32, bandwidth] : [fp32, tensor, bandwidth]
      return Math.sqrt(axes.reduce((sum, e) => sum + e * e, 0) / axes.length)
    }
  }
}

function clamp(value: number, min: number, max: number): number {
  return Math.min(max, Math.max(min, value))
}
