import type {CalibrateResult} from '../measure/calibrate-host.js'
import {fixed, formatTable} from './format-table.js'

/** The text view of `calibrate`: measured against the peak per axis, the samples, where it was stored. */
export function renderCalibrate(r: CalibrateResult): string {
  const pct = (v: number | null) => (v === null ? '-' : `${(v * 100).toFixed(1)}%`)
  const rows = [
    ['FP32 GEMM TFLOPS (TF32 off)', fixed(r.measured.fp32Tflops), fixed(r.peak.fp32Tflops), pct(r.fractions.fp32)],
    ['BF16 GEMM TFLOPS', fixed(r.measured.bf16Tflops), fixed(r.peak.bf16Tflops), pct(r.fractions.bf16)],
    ['Copy GB/s (read + write)', fixed(r.measured.bandwidthGBs, 0), fixed(r.peak.bandwidthGBs, 0), pct(r.fractions.bandwidth)],
  ]
  const clock = r.samples.smClockMHz ? `SM clock ${r.samples.smClockMHz.min}-${r.samples.smClockMHz.max} MHz` : 'no clock samples'
  const power = r.samples.powerW ? `, power ${r.samples.powerW.min}-${r.samples.powerW.max} W` : ''
  const throttle = r.samples.throttleReasons.length > 0 ? `, throttle: ${r.samples.throttleReasons.join(', ')}` : ''
  return [
    `GPU ${r.index}: ${r.gpu.name} (model ${r.gpu.model}), driver ${r.driver}, torch ${r.torch ?? '?'}, ${r.elapsedS} s`,
    '',
    formatTable(['AXIS', 'MEASURED', 'PEAK', 'ACHIEVED'], rows),
    '',
    `${clock}${power}${throttle}`,
    ...Object.entries(r.errors).map(([axis, why]) => `! ${axis} failed: ${why}`),
    `stored in ${r.file}`,
  ].join('\n')
}
