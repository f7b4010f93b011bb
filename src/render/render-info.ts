import {METHOD_LABELS} from '../catalog/measure-methods.js'
import type {AxisReference, Measurement, Target} from '../catalog/types.js'

const FIGURES: [keyof Measurement & `${string}${'Tflops' | 'GBs' | 'MiB'}`, string][] = [
  ['fp32Tflops', 'FP32'],
  ['tf32Tflops', 'TF32'],
  ['bf16Tflops', 'BF16'],
  ['fp16Tflops', 'FP16'],
  ['copyGBs', 'copy GB/s'],
  ['totalMemoryMiB', 'CUDA total MiB'],
  ['contextMiB', 'context MiB'],
]

/** The text view of `info`: one catalog entry, a field a line; what the card measures beside its datasheet. */
export function renderInfo(t: Target): string {
  const tf = (v: number | null) => (v === null ? 'none' : `${v} TFLOPS`)
  const r = t.reference
  const beside = (datasheet: string, ref: AxisReference | null | undefined, unit: string) =>
    !ref ? datasheet : `${datasheet}; ${ref.basis === 'measured' ? 'measures' : 'estimated'} ${ref.value} ${unit} (${METHOD_LABELS[ref.method]})`
  const tensorRow: [string, string] =
    t.bf16Tflops !== null ? ['BF16 tensor (FP32 acc.)', beside(tf(t.bf16Tflops), r?.tensorTflops, 'TFLOPS')] : ['BF16 tensor (FP32 acc.)', tf(t.bf16Tflops)]
  const lines: [string, string][] = [
    ['Name', `${t.name} (${t.key})`],
    ['Aliases', t.aliases.join(', ') || '-'],
    ['Architecture', `${t.arch} ${t.chip}, compute capability ${t.computeCapability}`],
    ['SMs / boost clock', `${t.smCount} SMs at ${t.boostClockMHz} MHz`],
    [
      'VRAM',
      `${t.vramGB} GB ${t.memoryType}${r?.totalMemoryMiB ? ` (CUDA reports ${r.totalMemoryMiB.value} MiB)` : ''}, ${beside(`${t.bandwidthGBs} GB/s`, r?.copyGBs, 'GB/s')}${t.l2CacheMB === null ? '' : `, L2 ${t.l2CacheMB} MB`}`,
    ],
    ['FP32', beside(tf(t.fp32Tflops), r?.fp32Tflops, 'TFLOPS')],
    tensorRow,
    ['FP16 tensor (FP32 acc.)', t.bf16Tflops === null ? beside(tf(t.fp16Tflops), r?.tensorTflops, 'TFLOPS') : tf(t.fp16Tflops)],
    ['TF32 tensor', tf(t.tf32Tflops)],
    ['FP8 tensor', tf(t.fp8Tflops)],
    ['TDP', `${t.tdpW} W`],
    ['Source', t.source],
  ]
  if (t.notes) lines.push(['Notes', t.notes])
  for (const m of t.measured ?? []) {
    const figures = FIGURES.filter(([f]) => m[f] !== undefined).map(([f, label]) => `${label} ${m[f]}`)
    lines.push(['Measured', `${figures.join(', ')} by ${METHOD_LABELS[m.method]} [${m.method}]`])
    lines.push(['  source', m.source])
    lines.push(['  rows', m.rows.join('; ')])
    if (m.rule) lines.push(['  rule', m.rule])
    for (const s of m.setAside ?? []) lines.push(['  set aside', `${s.row}: ${s.why}`])
    if (m.notes) lines.push(['  notes', m.notes])
  }
  const estimates = r ? [r.fp32Tflops, r.tensorTflops, r.copyGBs].filter((a): a is AxisReference => a?.basis === 'estimated') : []
  if (estimates.length > 0) lines.push(['Estimated', `no measurement for ${estimates.length === 3 ? 'any axis' : 'some axes'}: ${estimates[0].source}`])
  lines.push([
    'Several (--count N)',
    `each a slice of a bigger GPU (MIG instances, or MPS clients of one GPU), joined by host shared memory or the GPU itself, not by the PCIe or NVLink between real ${t.name}s: collectives run, at another speed (plan ${t.aliases[0] ?? t.key} --count 2 --on h200)`,
  ])
  const width = Math.max(...lines.map(([k]) => k.length))
  return lines.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n')
}
