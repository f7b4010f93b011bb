import type {HostModel} from '../catalog/types.js'
import type {Calibration} from '../host/calibration.js'
import {round} from '../core/units.js'
import {bf16TflopsAt, fp32TflopsAt} from './throughput.js'

export type AxisFigures = {readonly fp32Tflops: number | null; readonly bf16Tflops: number | null; readonly bandwidthGBs: number | null}

/** The whole GPU's datasheet peaks at its maximum clock, computed the way plan computes a slice's. */
export function hostPeak(model: HostModel): {fp32Tflops: number; bf16Tflops: number; bandwidthGBs: number} {
  return {
    fp32Tflops: round(fp32TflopsAt(model, model.smCount, model.clockMaxMHz), 2),
    bf16Tflops: round(bf16TflopsAt(model, model.smCount, model.clockMaxMHz), 1),
    bandwidthGBs: model.bandwidthGBs,
  }
}

/**
 * measured / peak per axis. A fraction measured on the whole GPU carries over to a slice at a locked clock:
 * it is the efficiency of cuBLAS and the memory system on this model and driver, not a throughput.
 */
export function calibrationFigures(model: HostModel, measured: AxisFigures): Pick<Calibration, 'peak' | 'fractions'> {
  const peak = hostPeak(model)
  const frac = (m: number | null, p: number) => (m === null || m <= 0 ? null : round(m / p, 4))
  return {
    peak,
    fractions: {
      fp32: frac(measured.fp32Tflops, peak.fp32Tflops),
      bf16: frac(measured.bf16Tflops, peak.bf16Tflops),
      bandwidth: frac(measured.bandwidthGBs, peak.bandwidthGBs),
    },
  }
}
