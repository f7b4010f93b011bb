import type {VerifyDistributedResult} from '../measure/verify-distributed.js'
import {METHOD_LABELS} from '../catalog/measure-methods.js'
import type {VerifyPerfResult} from '../measure/verify-perf.js'
import type {VerifyResult} from '../measure/verify-session.js'
import {fixed, formatTable} from './format-table.js'

/** The text view of `verify`: a check a line, then the counts. */
export function renderVerify(r: VerifyResult): string {
  const width = Math.max(5, ...r.checks.map((c) => c.name.length))
  return [
    ...r.checks.map((c) => `${c.status.padEnd(4)}  ${c.name.padEnd(width)}  ${c.detail}`),
    `${r.summary.PASS} passed, ${r.summary.FAIL} failed, ${r.summary.SKIP} skipped (session ${r.session})`,
  ].join('\n')
}

const AXIS_LABELS = {fp32: 'FP32 GEMM TFLOPS', bf16: 'BF16 GEMM TFLOPS', bandwidth: 'Copy GB/s (r+w)', vram: 'VRAM GiB usable'} as const

/**
 * The text view of `verify --perf`: each axis measured against the plan's expectations (peak, calibrated, measured)
 * with its verdict, then against what the real card measures and by which method; then the VRAM cap, clock and samples.
 */
export function renderVerifyPerf(r: VerifyPerfResult): string {
  const pct = (v: number | null | undefined) => (v === null || v === undefined ? '-' : `${v > 0 ? '+' : ''}${v.toFixed(1)}%`)
  const axes = Object.keys(AXIS_LABELS) as (keyof typeof AXIS_LABELS)[]
  const rows = axes.map((axis) => {
    const a = r.axes[axis]
    const d = axis === 'bandwidth' ? 0 : axis === 'vram' ? 2 : 1
    // CPU GEMMs are a few hundredths of a TFLOPS: keep their digits
    const measuredDigits = r.device.kind === 'cpu' && d === 1 ? 3 : d
    const card = a.reference ? `${a.reference.basis === 'estimated' ? '~' : ''}${a.reference.value.toFixed(d)}` : '-'
    return [
      AXIS_LABELS[axis],
      fixed(a.measured, measuredDigits),
      fixed(a.expectedPeak, d),
      fixed(a.expectedCalibrated, d),
      fixed(a.expectedMeasured ?? null, d),
      fixed(a.target, d),
      a.verdict,
      card,
      pct(a.vsReferencePct),
    ]
  })
  const methods = axes.flatMap((axis) => {
    const ref = r.axes[axis].reference
    return ref ? [`${AXIS_LABELS[axis]}: ${ref.basis === 'estimated' ? 'estimated, ' : ''}${METHOD_LABELS[ref.method]} (${ref.source})`] : []
  })
  const device = `${r.device.kind === 'cpu' ? 'CPU (measured on purpose, --cpu): ' : ''}${r.device.name}${r.device.driver ? `, driver ${r.device.driver}` : ''}`
  const s = r.samples.summary
  const sampled =
    r.samples.count > 0 && s
      ? `samples (${r.samples.count}, real values): SM clock ${s.smClockMHz ? `${s.smClockMHz.min}-${s.smClockMHz.max} MHz` : '-'}, power ${s.powerW ? `${s.powerW.min}-${s.powerW.max} W` : '-'}` +
        `, throttle ${s.throttleReasons.length > 0 ? s.throttleReasons.join(', ') : 'none'}`
      : `samples: none (${r.samples.reason ?? 'no nvidia-smi'})`
  const cap = r.vramCap
    ? `VRAM cap ${fixed(r.vramCap.capGiB, 2)} GiB: up to it ${r.vramCap.underCapOk ? 'works' : 'FAILS'}, 1 GiB more ${r.vramCap.overCapRefused ? 'is refused' : 'is ALLOWED'}` +
      (r.vramCap.cupyRefused === null ? '' : `; CuPy ${r.vramCap.cupyRefused ? 'refuses' : 'ALLOWS'} it`) +
      `; enforced by the driver: ${r.vramCap.hard === null ? 'unknown' : r.vramCap.hard ? 'yes' : 'no (library-level cap)'}` +
      (r.vramCap.hardPlanned ? ' (planned hard)' : '') +
      (r.vramCap.note ? ` - ${r.vramCap.note}` : '')
    : null
  const clock = r.clock?.plannedMHz
    ? `clock: planned ${r.clock.plannedMHz} MHz, observed FP32 ${r.clock.observedMHz.fp32 ?? '-'} / BF16 ${r.clock.observedMHz.bf16 ?? '-'} MHz` +
      (r.clock.factor.fp32 !== 1 || r.clock.factor.bf16 !== 1 ? ` (expectations scaled x${r.clock.factor.fp32} / x${r.clock.factor.bf16})` : '')
    : null
  return [
    `session ${r.session} on ${device}`,
    '',
    formatTable(['AXIS', 'MEASURED', 'PEAK', 'CALIBRATED', 'EXPECTED', 'TARGET', 'VERDICT', 'CARD', 'VS CARD'], rows),
    '',
    `this session measured by ${METHOD_LABELS[r.expectation.method]}; EXPECTED is the plan's measured expectation in that method`,
    `(VRAM: what the plan says a program can allocate), TARGET the card's datasheet, CARD what the real card measures`,
    `(~ estimated; VRAM: what it reports to CUDA), by:`,
    ...methods.map((m) => `  ${m}`),
    '',
    ...(cap ? [cap] : []),
    ...(clock && r.device.kind === 'cuda' ? [clock] : []),
    sampled,
    r.expectation.note,
    `${r.summary.PASS} passed, ${r.summary.WARN} warned, ${r.summary.FAIL} failed, ${r.summary.SKIP} skipped`,
  ].join('\n')
}

/** The text view of `verify --distributed`: the backend and why, then a rank a row. */
export function renderVerifyDistributed(r: VerifyDistributedResult): string {
  const rows = r.ranks.map((k) => [
    String(k.rank),
    k.device ?? '-',
    k.uuid ?? '-',
    k.memoryLimitMiB === null ? '-' : `${k.memoryLimitMiB} MiB`,
    k.allReduce ? `${k.allReduce.ms.toFixed(1)} ms (${k.allReduce.busGBs.toFixed(2)} GB/s)` : '-',
    k.ddpStepMs === null ? '-' : `${k.ddpStepMs.toFixed(1)} ms`,
    k.ok ? 'PASS' : `FAIL: ${k.error ?? 'no result'}`,
  ])
  const lines = [
    `${r.session}: ${r.count} ranks, backend ${r.backend ?? '-'} (${r.why ?? '-'}); torch ${r.torch ?? '-'}${r.nccl ? `, NCCL ${r.nccl}` : ''}`,
    '',
    formatTable(['RANK', 'DEVICE', 'NARROWED TO', 'MEMORY', 'ALL-REDUCE 16 MiB', 'DDP STEP', 'RESULT'], rows),
  ]
  if (!r.devicesMatch) lines.push('', "! a rank reached another device than the session's own for it")
  if (r.error) lines.push('', `error: ${r.error}`)
  if (r.kind === 'cpu') lines.push('', '  on the CPU (torch has no CUDA here): the ranks, the costume and the collectives are checked, not the GPU link')
  lines.push('', r.ok ? 'PASS' : 'FAIL')
  return lines.join('\n')
}
