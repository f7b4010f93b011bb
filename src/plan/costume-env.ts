import {COSTUME_ENV} from '../core/names.js'
import type {Plan} from './types.js'

/**
 * The environment the costume (runtime-hooks/) reads inside the container. VRAM figures are binary,
 * as nvidia-smi shows them; the fraction is rounded down to 4 decimals like the Python side.
 */
export function costumeEnv(plan: Plan, target: {hasTf32: boolean}, physicalMiB: number, sessionName: string): Record<string, string> {
  const capMiB = plan.vramCapMiB
  const fraction = Math.min(1, Math.floor((capMiB / physicalMiB) * 10_000) / 10_000)
  return {
    [COSTUME_ENV.card]: plan.target.key,
    [COSTUME_ENV.name]: plan.target.name,
    [COSTUME_ENV.vramGB]: String(plan.target.vramGB),
    [COSTUME_ENV.vramMiB]: String(capMiB),
    [COSTUME_ENV.physVramMiB]: String(physicalMiB),
    [COSTUME_ENV.tdpW]: String(plan.target.tdpW),
    [COSTUME_ENV.fp32Tflops]: String(plan.target.fp32Tflops),
    [COSTUME_ENV.bf16Tflops]: plan.target.bf16Tflops === null ? '' : String(plan.target.bf16Tflops),
    [COSTUME_ENV.bandwidthGBs]: String(plan.target.bandwidthGBs),
    [COSTUME_ENV.hasBf16]: plan.target.bf16Tflops === null ? '0' : '1',
    [COSTUME_ENV.hasTf32]: target.hasTf32 ? '1' : '0',
    [COSTUME_ENV.session]: sessionName,
    XLA_PYTHON_CLIENT_PREALLOCATE: 'false',
    XLA_CLIENT_MEM_FRACTION: String(fraction),
    XLA_PYTHON_CLIENT_MEM_FRACTION: String(fraction),
    CUPY_GPU_MEMORY_LIMIT: String(capMiB * 1024 * 1024),
  }
}
