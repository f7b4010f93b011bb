/**
 * How a measured figure in the catalog was taken. Figures are only compared with figures of the same method, or
 * with the method named beside them: on one H200 the same BF16 GEMM reads 790 TFLOPS as the best of several sizes,
 * 775 as a median of 8192^3 calls and 676 in a 1.5 s steady-state window under the power cap.
 */
export const MEASURE_METHODS = ['matmul-best-of-sizes', 'copy-2x-time', 'cosplay-perf', 'mps-sweep-gemm', 'device-properties'] as const
export type MeasureMethod = (typeof MEASURE_METHODS)[number]

export const METHOD_NOTES: Readonly<Record<MeasureMethod, string>> = {
  'matmul-best-of-sizes':
    'torch.mm on square matrices of 1024, 2048, 4096, 8192 and 10240, 10 calls to warm up, 30 back to back timed with CUDA events, the best size (TF32 off for FP32)',
  'copy-2x-time':
    'a.copy_(b) of fp32 tensors up to 2^26.5 elements (about 380 MB), one copy timed with time.time() after a synchronize, 10 trials, 2 x bytes / time',
  'cosplay-perf':
    "gpu-cosplay's runtime-hooks/gpu_cosplay_perf.py (verify --perf, calibrate): 8192^3 GEMM after a steady-state warm-up, the median call of a 1.5 s window; a 1 GiB device copy counted as 2 x bytes / time",
  'mps-sweep-gemm': "gpu-cosplay's bench/gpu/mps_sweep.py: one MPS client per active-thread percentage, BF16 GEMM 8192^3, median of 7",
  'device-properties': "the total memory CUDA reports for the device (cudaGetDeviceProperties totalGlobalMem, deviceQuery, torch's total_memory)",
}

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
