import type {Target} from '../catalog/types.js'

/** The text view of `info`: one catalog entry, a field a line. */
export function renderInfo(t: Target): string {
  const tf = (v: number | null) => (v === null ? 'none' : `${v} TFLOPS`)
  const lines: [string, string][] = [
    ['Name', `${t.name} (${t.key})`],
    ['Aliases', t.aliases.join(', ') || '-'],
    ['Architecture', `${t.arch} ${t.chip}, compute capability ${t.computeCapability}`],
    ['SMs / boost clock', `${t.smCount} SMs at ${t.boostClockMHz} MHz`],
    ['VRAM', `${t.vramGB} GB ${t.memoryType}, ${t.bandwidthGBs} GB/s${t.l2CacheMB === null ? '' : `, L2 ${t.l2CacheMB} MB`}`],
    ['FP32', tf(t.fp32Tflops)],
    ['BF16 tensor (FP32 acc.)', tf(t.bf16Tflops)],
    ['FP16 tensor (FP32 acc.)', tf(t.fp16Tflops)],
    ['TF32 tensor', tf(t.tf32Tflops)],
    ['FP8 tensor', tf(t.fp8Tflops)],
    ['TDP', `${t.tdpW} W`],
    ['Source', t.source],
  ]
  if (t.notes) lines.push(['Notes', t.notes])
  const width = Math.max(...lines.map(([k]) => k.length))
  return lines.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n')
}
