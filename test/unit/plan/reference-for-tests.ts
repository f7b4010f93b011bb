import type {AxisReference, TargetReference} from '../../../src/catalog/types.js'

const axis = (value: number): AxisReference => ({value, basis: 'measured', method: 'matmul-best-of-sizes', source: 'test'})

/** A target reference with the given measured figures; the other throughput axes estimated at 1. */
export function measuredReference(figures: {fp32?: number; bf16?: number; bandwidth?: number}): TargetReference {
  const estimated = (value: number | undefined): AxisReference => (value === undefined ? {...axis(1), basis: 'estimated'} : axis(value))
  return {
    fp32Tflops: estimated(figures.fp32),
    tensorTflops: estimated(figures.bf16),
    copyGBs: {...estimated(figures.bandwidth), method: 'copy-2x-time'},
    totalMemoryMiB: null,
    contextMiB: null,
  }
}
