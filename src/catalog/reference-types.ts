import type {MeasureMethod} from './measure-methods.js'

/** measured: a sourced measurement of this card; estimated: from its datasheet, by the model fitted on measured cards */
export type ReferenceBasis = 'measured' | 'estimated'

/** One figure of what a card really does, with how it is known. */
export type AxisReference = {
  readonly value: number
  readonly basis: ReferenceBasis
  readonly method: MeasureMethod
  /** the measurement's source, or how the estimate was made */
  readonly source: string
}

/**
 * What a target really does, per axis, derived once when the catalog is loaded from its `measured` entries and,
 * for axes no entry gives, the estimate (achieved-model.ts). The planner aims at these.
 */
export type TargetReference = {
  /** FP32 GEMM, TF32 off */
  readonly fp32Tflops: AxisReference
  /** BF16 GEMM, or FP16 where the card has no BF16 (Volta, Turing); null without tensor cores */
  readonly tensorTflops: AxisReference | null
  readonly copyGBs: AxisReference
  /** what CUDA reports as the device's total memory; null where no source gives it */
  readonly totalMemoryMiB: AxisReference | null
  /** what a CUDA context with torch takes on the card; null where no source gives it */
  readonly contextMiB: AxisReference | null
}

/** A host model's whole-GPU rates, from the target entry that is the same card (`measuredAs`). */
export type HostMeasuredRates = {
  /** the target entry they come from */
  readonly card: string
  readonly reference: TargetReference
  /** the same card by gpu_cosplay_perf.py (calibrate's method), where measured: relates a calibration to the reference */
  readonly cosplayPerf: {
    readonly fp32Tflops: number | null
    readonly bf16Tflops: number | null
    readonly copyGBs: number | null
    readonly source: string
  } | null
  /** the same card's BF16 GEMM in an MPS sweep's method (8192^3 median, at the clock in force), where measured */
  readonly sweep: {readonly bf16Tflops: number; readonly source: string} | null
}
