import type {Target} from '../catalog/types.js'
import {fixed, formatTable} from './format-table.js'

/** The text view of `ls`: one row per target, its throughput dense. */
export function renderLs(targets: readonly Target[]): string {
  const rows = targets.map((t) => [
    t.key,
    t.name,
    t.arch,
    fixed(t.vramGB, 0),
    fixed(t.fp32Tflops),
    fixed(t.bf16Tflops),
    fixed(t.bandwidthGBs, 0),
    fixed(t.tdpW, 0),
  ])
  return formatTable(['KEY', 'NAME', 'ARCH', 'VRAM GB', 'FP32 TF', 'BF16 TF', 'BW GB/s', 'TDP W'], rows)
}
