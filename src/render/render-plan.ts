import type {PlanResult} from '../client/plan-for.js'
import {fixed, formatTable} from './format-table.js'

const AXIS_NAMES = {fp32: 'FP32', bf16: 'BF16 tensor', 'fp16-tensor': 'FP16 tensor', bandwidth: 'bandwidth'} as const

/** The text view of `plan`: the slice, clock, power and shaping chosen, then each axis against the target. */
export function renderPlan(plan: PlanResult): string {
  const where = plan.host.index === null ? `${plan.host.name} (model ${plan.host.model}, assumed idle)` : `GPU ${plan.host.index}: ${plan.host.name}`
  const slice = plan.mig
    ? `MIG ${plan.mig.profile} (profile ${plan.mig.profileId}, ${plan.mig.smCount} SMs, ${plan.mig.memoryGiB} GiB)`
    : `whole GPU (${plan.host.smCount ?? plan.smCount} SMs)`
  const pct = (v: number | null) => (v === null ? '-' : `${v > 0 ? '+' : ''}${v.toFixed(1)}%`)
  const a = plan.achievable
  // ERROR: peak vs the target's datasheet (what the planner matched). Where the catalog has the target's
  // achieved figure and this host is calibrated, ACHIEVED ERROR compares achievable with it: like with like.
  const alike = a.targetAchieved.length > 0
  const row = (
    label: string,
    peak: number | null,
    achievable: number | null,
    target: number | null,
    error: number | null,
    achieved: [number | null, number | null],
    digits = 1,
  ) => [
    label,
    fixed(peak, digits),
    fixed(achievable, digits),
    fixed(target, digits),
    pct(error),
    ...(alike ? [fixed(achieved[0], digits), pct(achieved[1])] : []),
  ]
  const achievedTarget = (axis: 'fp32' | 'bf16' | 'bandwidth', figure: number | null, error: number | null): [number | null, number | null] =>
    a.targetAchieved.includes(axis) ? [figure, error] : [null, null]
  const rows = [
    row(
      'FP32 TFLOPS',
      plan.expected.fp32Tflops,
      a.expected.fp32Tflops,
      plan.target.fp32Tflops,
      plan.errors.fp32Pct,
      achievedTarget('fp32', a.target.fp32Tflops, a.errors.fp32Pct),
    ),
    row(
      'BF16 tensor TFLOPS',
      plan.expected.bf16Tflops,
      a.expected.bf16Tflops,
      plan.target.bf16Tflops,
      plan.errors.bf16Pct,
      achievedTarget('bf16', a.target.bf16Tflops, a.errors.bf16Pct),
    ),
    row(
      'Bandwidth GB/s',
      plan.expected.bandwidthGBs,
      a.expected.bandwidthGBs,
      plan.target.bandwidthGBs,
      plan.errors.bandwidthPct,
      achievedTarget('bandwidth', a.target.bandwidthGBs, a.errors.bandwidthPct),
      0,
    ),
    // the VRAM cap is exact: nothing to calibrate
    row('VRAM GiB', plan.expected.vramGB, plan.expected.vramGB, plan.target.vramGB, plan.errors.vramPct, [null, null]),
  ]
  // A target without BF16 is matched on its FP16 tensor figure: show that axis too, so the trade is visible.
  const fp16 = plan.weighed.find((w) => w.axis === 'fp16-tensor')
  if (fp16) rows.splice(2, 0, row('FP16 tensor TFLOPS', fp16.expected, null, fp16.target, fp16.errorPct, [null, null]))
  const lines = [
    `${plan.target.name} on ${where}, matching ${plan.objective}`,
    `  slice:  ${slice}${plan.needsMigEnable ? ' (MIG mode must be turned on)' : ''}`,
    `  clock:  ${plan.clockMHz === null ? `unlocked (max ${plan.effectiveClockMHz} MHz)` : `locked at ${plan.clockMHz} MHz`}`,
    `  power:  ${plan.powerLimitW === null ? 'left as found' : `${plan.powerLimitW} W`} (GPU-wide)`,
    `  MPS:    ${plan.mps ? `${plan.mps.activeThreadPercentage}% active threads = ${plan.mps.smCount} of ${plan.mig?.smCount ?? plan.host.smCount ?? plan.smCount} SMs, ${plan.mps.pinnedMemLimitMiB} MiB pinned (cap ${plan.vramCapMiB} + ${plan.mps.pinnedMemLimitMiB - plan.vramCapMiB} MiB for the context and library buffers)` : 'not available here: GPU-wide knobs shape the session'}`,
    `  GPU-wide: ${plan.gpuWide.reason}`,
    `  weighs: ${plan.weighed.map((w) => `${AXIS_NAMES[w.axis]} ${w.errorPct > 0 ? '+' : ''}${w.errorPct.toFixed(1)}%`).join(', ')} (--match ${plan.objective})`,
    `  VRAM:   capped at ${plan.vramCapGiB} GiB (${plan.vramCapMiB} MiB)`,
    '',
    formatTable(['AXIS', 'PEAK', 'ACHIEVABLE', 'TARGET', 'ERROR', ...(alike ? ['TARGET ACHIEVED', 'ACHIEVED ERROR'] : [])], rows),
    '',
    `  expectation: ${a.basis === 'calibrated' ? 'achievable (calibrated)' : 'peak'}; ${a.note}`,
  ]
  if (plan.warnings.length > 0) lines.push('', ...plan.warnings.map((w) => `! ${w}`))
  return lines.join('\n')
}
