import {HostError} from '../core/errors.js'
import type {Executor} from '../core/executor.js'
import {parsePerfOutput, type PerfMeasurement} from './perf-measurement.js'

export type HostPerfOptions = {
  /** the interpreter with torch (GPU_COSPLAY_PYTHON, default python3) */
  readonly python: string
  /** runtime-hooks/gpu_cosplay_perf.py of this install */
  readonly script: string
  readonly gpuIndex: number
  readonly gpuUuid: string
  readonly timeoutMs?: number
  /** the nvidia-smi the tool uses (GPU_COSPLAY_NVIDIA_SMI or PATH's), handed to the script as --smi */
  readonly smiPath?: string
  /** the caller's environment: what would shape the measurement (MPS, allocator, costume settings) is removed from it */
  readonly callerEnv?: Readonly<Record<string, string | undefined>>
}

/**
 * Variables that would measure something other than the host as it is: a client of someone's MPS daemon
 * (CUDA_MPS_*), an allocator configuration, the costume's settings (GPU_COSPLAY_*, which also load the hook).
 */
export function isShapingVariable(name: string): boolean {
  return name.startsWith('CUDA_MPS_') || name.startsWith('GPU_COSPLAY_') || name === 'PYTORCH_CUDA_ALLOC_CONF' || name === 'CUDA_VISIBLE_DEVICES'
}

/** The child's environment: the caller's minus every shaping variable (unset), plus the GPU chosen by UUID. */
export function measurementEnv(callerEnv: Readonly<Record<string, string | undefined>>, gpuUuid: string): Record<string, string | undefined> {
  const unset = Object.fromEntries(
    Object.keys(callerEnv)
      .filter((k) => isShapingVariable(k))
      .map((k) => [k, undefined]),
  )
  return {...unset, CUDA_VISIBLE_DEVICES: gpuUuid}
}

/** The measurement stays under 30 s on a GPU; this is for a stuck driver, not a slow run. */
const TIMEOUT_MS = 180_000

/**
 * The funnel for the host-side Python measurement: runs gpu_cosplay_perf.py on one whole GPU, chosen by
 * UUID through CUDA_VISIBLE_DEVICES (indexes differ between CUDA and nvidia-smi), without the VRAM probe
 * (other users may hold memory on a shared GPU). It measures the host as it is: the caller's MPS, allocator and
 * GPU_COSPLAY_* settings do not reach the script (the nvidia-smi to sample with is passed as an argument).
 */
export async function measureHostPerf(executor: Executor, options: HostPerfOptions): Promise<PerfMeasurement> {
  const argv = [
    options.python,
    options.script,
    '--device',
    'cuda',
    '--no-vram',
    '--smi-id',
    options.gpuUuid,
    ...(options.smiPath ? ['--smi', options.smiPath] : []),
  ]
  let ran
  try {
    ran = await executor.run(argv, {env: measurementEnv(options.callerEnv ?? {}, options.gpuUuid), timeoutMs: options.timeoutMs ?? TIMEOUT_MS})
  } catch (error) {
    throw new HostError('PYTHON_NOT_FOUND', `cannot run ${options.python}: ${(error as Error).message}`, {
      cause: error,
      fix: ['install python3 with torch (CUDA build) on the host', 'or point GPU_COSPLAY_PYTHON at an interpreter that has it'],
    })
  }
  if (ran.timedOut) {
    throw new HostError('PERF_TIMEOUT', `the measurement on GPU ${options.gpuIndex} ran past ${Math.round((options.timeoutMs ?? TIMEOUT_MS) / 1000)} s`, {
      fix: ['check the GPU is not stuck: nvidia-smi', 'rerun with DEBUG=gpu-cosplay* for details'],
    })
  }
  const output = parsePerfOutput(ran.stdout)
  if (output?.kind === 'refused') {
    const code = output.code === 'NO_CUDA' ? 'CALIBRATE_NO_CUDA' : output.code === 'NO_TORCH' ? 'PERF_NO_TORCH' : 'PERF_MEASURE_FAILED'
    throw new HostError(code, `GPU ${options.gpuIndex}: ${output.message}`, {
      fix: [
        'calibrate needs a CUDA GPU and torch built for CUDA on the host',
        'point GPU_COSPLAY_PYTHON at an interpreter with CUDA torch (python -c "import torch; print(torch.cuda.is_available())")',
      ],
    })
  }
  if (output === null || ran.exitCode !== 0) {
    const last = (ran.stderr || ran.stdout).trim().split('\n').pop() ?? ''
    throw new HostError('PERF_MEASURE_FAILED', `the measurement on GPU ${options.gpuIndex} printed no result (exit ${ran.exitCode}): ${last}`, {
      fix: ['rerun it by hand to see why: ' + argv.join(' ')],
    })
  }
  if (output.measurement.device.kind !== 'cuda') {
    throw new HostError('CALIBRATE_NO_CUDA', `GPU ${options.gpuIndex}: torch ran on the CPU, not on the GPU`, {
      fix: ['point GPU_COSPLAY_PYTHON at an interpreter with CUDA torch'],
    })
  }
  return output.measurement
}
