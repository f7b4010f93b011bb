import {METHOD_LABELS, type MeasureMethod} from '../catalog/measure-methods.js'
import type {PlanResult} from '../client/plan-for.js'
import {fixed, formatTable} from './format-table.js'

const AXIS_NAMES = {fp32: 'FP32', bf16: 'BF16 tensor', 'fp16-tensor': 'FP16 tensor', bandwidth: 'bandwidth'} as const

/**
 * The text view of `plan`: the slice, clock, power and shaping chosen, then each axis twice: against the target's
 * datasheet (PEAK: datasheet arithmetic for the slice) and against what the card measures (EXPECTED: what the slice
 * measures, from its SMs, clock and this host's measured rates). The `basis:` line says which one the plan matched.
 */
export function renderPlan(plan: PlanResult): string {
  const where = plan.host.index === null ? `${plan.host.name} (model ${plan.host.model}, assumed idle)` : `GPU ${plan.host.index}: ${plan.host.name}`
  const slice = plan.mig
    ? `MIG ${plan.mig.profile} (profile ${plan.mig.profileId}, ${plan.mig.smCount} SMs, ${plan.mig.memoryGiB} GiB)`
    : `whole GPU (${plan.host.smCount ?? plan.smCount} SMs)`
  const pct = (v: number | null) => (v === null ? '-' : `${v > 0 ? '+' : ''}${v.toFixed(1)}%`)
  const m = plan.measured ?? null
  const est = (value: number | null, basis: 'measured' | 'estimated' | null | undefined, digits: number) =>
    value === null ? '-' : `${basis === 'estimated' ? '~' : ''}${value.toFixed(digits)}`
  const row = (label: string, datasheet: number | null, peak: number | null, error: number | null, measured: [string, string, string], digits = 1) => [
    label,
    fixed(datasheet, digits),
    fixed(peak, digits),
    pct(error),
    ...(m ? measured : []),
  ]
  const tensorLabel = plan.weighed.some((w) => w.axis === 'fp16-tensor') || plan.target.bf16Tflops === null ? 'FP16 tensor TFLOPS' : 'BF16 tensor TFLOPS'
  const fp16 = plan.weighed.find((w) => w.axis === 'fp16-tensor')
  const mem = plan.memory
  const rows = [
    row('FP32 TFLOPS', plan.target.fp32Tflops, plan.expected.fp32Tflops, plan.errors.fp32Pct, [
      est(m?.target.fp32Tflops ?? null, m?.targetBasis.fp32, 1),
      fixed(m?.expected.fp32Tflops ?? null, 1),
      pct(m?.errors.fp32Pct ?? null),
    ]),
    row(tensorLabel, plan.target.bf16Tflops ?? fp16?.target ?? null, plan.expected.bf16Tflops, plan.errors.bf16Pct ?? fp16?.errorPct ?? null, [
      est(m?.target.bf16Tflops ?? null, m?.targetBasis.bf16, 1),
      fixed(m?.expected.bf16Tflops ?? null, 1),
      pct(m?.errors.bf16Pct ?? null),
    ]),
    row(
      'Bandwidth GB/s',
      plan.target.bandwidthGBs,
      plan.expected.bandwidthGBs,
      plan.errors.bandwidthPct,
      [est(m?.target.bandwidthGBs ?? null, m?.targetBasis.bandwidth, 0), fixed(m?.expected.bandwidthGBs ?? null, 0), pct(m?.errors.bandwidthPct ?? null)],
      0,
    ),
    // VRAM: the card's size against the cap; measured: what CUDA reports on the card against what a program can allocate here
    row('VRAM GiB', plan.target.vramGB, plan.expected.vramGB, plan.errors.vramPct, [
      mem ? est(mem.cudaTotalMiB / 1024, mem.cudaTotalBasis === 'assumed' ? 'estimated' : 'measured', 1) : '-',
      mem ? fixed(mem.allocatableMiB / 1024, 1) : '-',
      '-',
    ]),
  ]
  const basis = plan.basis ?? 'datasheet'
  const limitLine = mem
    ? `  VRAM:   ${plan.vramCapGiB} GiB as nvidia-smi shows it (${plan.vramCapMiB} MiB); CUDA total ${mem.cudaTotalMiB} MiB` +
      (mem.cudaTotalBasis === 'assumed' ? ' (not known for this card: its VRAM)' : '') +
      `; hard limit ${mem.hardLimitMiB === null ? 'none (the costume only)' : `${mem.hardLimitMiB} MiB (${mem.hardLimitBy === 'mps' ? 'MPS pinned' : 'MIG slice'})`}` +
      `; a program can allocate about ${mem.allocatableMiB} MiB`
    : `  VRAM:   capped at ${plan.vramCapGiB} GiB (${plan.vramCapMiB} MiB)`
  const lines = [
    `${plan.target.name} on ${where}, matching ${plan.objective}`,
    `  basis:  ${basis}: ${plan.basisNote ?? 'datasheet peaks against the datasheet'}`,
    `  slice:  ${slice}${plan.needsMigEnable ? ' (MIG mode must be turned on)' : ''}`,
    `  clock:  ${plan.clockMHz === null ? `unlocked (max ${plan.effectiveClockMHz} MHz)` : `locked at ${plan.clockMHz} MHz`}`,
    `  power:  ${plan.powerLimitW === null ? 'left as found' : `${plan.powerLimitW} W`} (GPU-wide)`,
    `  MPS:    ${plan.mps ? `${plan.mps.activeThreadPercentage}% active threads = ${plan.mps.smCount} of ${plan.mig?.smCount ?? plan.host.smCount ?? plan.smCount} SMs, ${plan.mps.pinnedMemLimitMiB} MiB pinned` : 'not available here: GPU-wide knobs shape the session'}`,
    `  GPU-wide: ${plan.gpuWide.reason}`,
    `  weighs: ${plan.weighed.map((w) => `${AXIS_NAMES[w.axis]} ${w.errorPct > 0 ? '+' : ''}${w.errorPct.toFixed(1)}%`).join(', ')} (--match ${plan.objective}, ${basis})`,
    limitLine,
    ...ranksLines(plan),
    '',
    formatTable(['AXIS', 'DATASHEET', 'PEAK', 'ERROR', ...(m ? ['MEASURED', 'EXPECTED', 'ERROR'] : [])], rows),
    '',
  ]
  if (m) {
    lines.push(
      `  DATASHEET, PEAK: the card's datasheet; datasheet arithmetic for this slice and clock.`,
      `  MEASURED, EXPECTED: what the card measures (~ estimated from its datasheet); what this slice measures, from its`,
      `  own SMs and clock and this host's rates. VRAM: what the card reports to CUDA; what a program can allocate here.`,
      `  methods: GEMM ${methodText(m.methods.gemm)}; copy ${methodText(m.methods.targetCopy)} (the card),`,
      `           ${methodText(m.methods.hostCopy)} (this host)`,
      `  host rates: FP32 ${m.hostRates.fp32}`,
      `              BF16 ${m.hostRates.bf16}`,
      `              copy ${m.hostRates.bandwidth}`,
    )
  }
  if (plan.achievable.basis === 'calibrated') lines.push(`  calibration: ${plan.achievable.note}`)
  if (plan.warnings.length > 0) lines.push('', ...plan.warnings.map((w) => `! ${w}`))
  return lines.join('\n')
}

/** `--count N`: where the ranks go and what joins them (each rank is the plan above). */
function ranksLines(plan: PlanResult): string[] {
  const r = plan.ranks
  if (!r) return []
  const on = r.gpus.map((g) => `${g.ranks} on ${g.index === null ? plan.host.name : `GPU ${g.index}`}`).join(', ')
  return [`  ranks:  ${r.count} devices, each as below: ${on}; /dev/shm ${r.shmMiB} MiB`, `  link:   ${r.link.note}`]
}

function methodText(method: string): string {
  return (METHOD_LABELS as Record<string, string | undefined>)[method as MeasureMethod] ?? method
}
