import {COSTUME_ENV} from '../core/names.js'
import type {Plan} from './types.js'

/**
 * The environment the costume (runtime-hooks/) reads inside the container. VRAM figures are binary: the card's VRAM
 * as nvidia-smi shows it (VRAM_MIB), what the card reports to CUDA (CUDA_TOTAL_MIB) and what torch's allocator, CuPy
 * and JAX may hold (ALLOC_CAP_MIB, never above the session's hard limit; the JAX fraction and the CuPy limit use it). The memory fraction is the one in runtime-hooks/gpu_cosplay_env.py
 * (mem_fraction + format_fraction): floored to 4 decimals in integer arithmetic, clamped to [0.0001, 1],
 * always printed with 4 decimals; verify.py compares the strings, and test/unit/plan/costume-contract.test.ts
 * runs the Python side over every (host model x target) plan.
 */
export function costumeEnv(plan: Plan, target: {hasTf32: boolean}, physicalMiB: number, sessionName: string): Record<string, string> {
  const capMiB = plan.vramCapMiB
  // a plan journaled before memory limits had one figure for all three
  const cudaTotalMiB = plan.memory?.cudaTotalMiB ?? capMiB
  const allocCapMiB = plan.memory?.allocatorCapMiB ?? capMiB
  const fraction = memFraction(allocCapMiB, physicalMiB)
  return {
    [COSTUME_ENV.card]: plan.target.key,
    [COSTUME_ENV.name]: plan.target.name,
    [COSTUME_ENV.vramGB]: String(plan.target.vramGB),
    [COSTUME_ENV.vramMiB]: String(capMiB),
    [COSTUME_ENV.cudaTotalMiB]: String(cudaTotalMiB),
    [COSTUME_ENV.allocCapMiB]: String(allocCapMiB),
    [COSTUME_ENV.physVramMiB]: String(physicalMiB),
    [COSTUME_ENV.tdpW]: String(plan.target.tdpW),
    [COSTUME_ENV.fp32Tflops]: String(plan.target.fp32Tflops),
    [COSTUME_ENV.bf16Tflops]: plan.target.bf16Tflops === null ? '' : String(plan.target.bf16Tflops),
    [COSTUME_ENV.bandwidthGBs]: String(plan.target.bandwidthGBs),
    [COSTUME_ENV.hasBf16]: plan.target.bf16Tflops === null ? '0' : '1',
    [COSTUME_ENV.hasTf32]: target.hasTf32 ? '1' : '0',
    [COSTUME_ENV.session]: sessionName,
    XLA_PYTHON_CLIENT_PREALLOCATE: 'false',
    XLA_CLIENT_MEM_FRACTION: fraction,
    XLA_PYTHON_CLIENT_MEM_FRACTION: fraction,
    CUPY_GPU_MEMORY_LIMIT: String(allocCapMiB * 1024 * 1024),
  }
}

/** cap / physical as 4 decimals, e.g. "0.5000" (Python: "%.4f" % (int(cap * 10000 // phys) / 10000.0)). */
export function memFraction(capMiB: number, physicalMiB: number): string {
  const tenThousandths = Math.min(10_000, Math.max(1, Math.floor((capMiB * 10_000) / physicalMiB)))
  return (tenThousandths / 10_000).toFixed(4)
}

/** One rank's device as the costume narrows a process to it (runtime-hooks: GPU_COSPLAY_RANKS). */
export type RankDevice = {readonly uuid: string; readonly mpsPipe: string | null}

/**
 * up --count N: what every process of the session needs to find its own device: the devices in ordinal order, and
 * the visibility of all of them (each rank's process is narrowed to its own by the costume, before CUDA starts).
 */
export function ranksEnv(ranks: readonly RankDevice[]): Record<string, string> {
  // MPS shares of one GPU without MIG name it once: a device listed twice is refused by CUDA
  const all = [...new Set(ranks.map((r) => r.uuid))].join(',')
  return {[COSTUME_ENV.ranks]: JSON.stringify(ranks.map((r) => ({uuid: r.uuid, mpsPipe: r.mpsPipe}))), CUDA_VISIBLE_DEVICES: all, NVIDIA_VISIBLE_DEVICES: all}
}
