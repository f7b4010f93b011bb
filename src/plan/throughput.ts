import type {HostModel} from '../catalog/types.js'

/**
 * TFLOPS = SMs x FLOPs per SM per clock x clock. The per-SM rates already count an FMA as 2 FLOPs;
 * the Python original multiplied by 2 again and so planned every cosplay at half the target FP32.
 */
export function fp32TflopsAt(model: HostModel, smCount: number, clockMHz: number): number {
  return (smCount * model.fp32FlopsPerSmClk * clockMHz) / 1e6
}

/** Tensor peaks are sustained only up to the tensor clock NVIDIA quotes them at (1830 MHz on H100/H200 SXM). */
export function bf16TflopsAt(model: HostModel, smCount: number, clockMHz: number): number {
  const tensorClockMHz = Math.min(clockMHz, model.tensorClockMaxMHz ?? clockMHz)
  return (smCount * model.bf16FlopsPerSmClk * tensorClockMHz) / 1e6
}

/**
 * MIG gives each GPU instance its own memory slices (controllers, L2, DRAM), so bandwidth follows
 * memory slices, not SM count. HBM bandwidth is set by the memory clock, which the SM clock lock leaves alone.
 */
export function migBandwidthGBs(model: HostModel, memorySlices: number): number {
  const totalSlices = model.mig?.memorySlices ?? 1
  return (model.bandwidthGBs * memorySlices) / totalSlices
}

/** nvidia-smi -lgc snaps to supported clocks; on Ampere/Hopper data-center parts they sit 15 MHz apart, down from the maximum. */
export const CLOCK_STEP_MHZ = 15

export function supportedClocksMHz(range: {min: number; max: number}): number[] {
  const clocks: number[] = []
  for (let clock = range.max; clock >= range.min; clock -= CLOCK_STEP_MHZ) clocks.push(clock)
  return clocks
}
