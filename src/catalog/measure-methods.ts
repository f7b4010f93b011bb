/**
 * How a measured figure in the catalog was taken. Figures are only compared with figures of the same method, or
 * with the method named beside them: on one H200 the same BF16 GEMM reads 790 TFLOPS as the best of several sizes,
 * 775 as a median of 8192^3 calls and 676 in a 1.5 s steady-state window under the power cap.
 */
export const MEASURE_METHODS = ['matmul-best-of-sizes', 'copy-2x-time', 'cosplay-perf', 'mps-sweep-gemm', 'device-properties'] as const
export type MeasureMethod = (typeof MEASURE_METHODS)[number]

/** A few words per method, for one-line views (plan, info, verify). */
export const METHOD_LABELS: Readonly<Record<MeasureMethod, string>> = {
  'matmul-best-of-sizes': 'torch.mm, the best of sizes 1024-10240',
  'copy-2x-time': 'one copy_() timed, 2 x bytes / time',
  'cosplay-perf': "gpu_cosplay_perf.py's steady 1.5 s window",
  'mps-sweep-gemm': 'MPS sweep, BF16 GEMM 8192^3',
  'device-properties': "CUDA's total memory",
}

/** The GEMM method the catalog's references and the estimate are stated in; others are converted or named. */
export const REFERENCE_GEMM_METHOD: MeasureMethod = 'matmul-best-of-sizes'
/** Copy methods in the order a target's bandwidth reference is taken from. */
export const COPY_METHODS_BY_PREFERENCE: readonly MeasureMethod[] = ['copy-2x-time', 'cosplay-perf']
