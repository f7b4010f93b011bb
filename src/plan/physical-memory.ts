import type {Plan} from './types.js'

/** Memory of the slice (or whole GPU) a session runs on, in MiB: what the costume's VRAM fraction is taken of. */
export function physicalMiBOf(plan: Pick<Plan, 'mig' | 'vramCapMiB'>, wholeGpuMiB: number | null): number {
  return plan.mig ? Math.round(plan.mig.memoryGiB * 1024) : (wholeGpuMiB ?? plan.vramCapMiB)
}
