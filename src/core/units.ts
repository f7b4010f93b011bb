/** Unit conversions. Marketing "GB" is decimal; nvidia-smi and the CUDA runtime count binary MiB/GiB. */
export const MIB_PER_GIB = 1024
export const BYTES_PER_MIB = 1024 * 1024

export function gibToMib(gib: number): number {
  return Math.round(gib * MIB_PER_GIB)
}

export function mibToGib(mib: number): number {
  return mib / MIB_PER_GIB
}

export function round(value: number, digits = 1): number {
  const f = 10 ** digits
  return Math.round(value * f) / f
}

/** Signed relative error in percent, (actual - wanted) / wanted. */
export function errorPct(actual: number, wanted: number): number {
  return wanted === 0 ? 0 : ((actual - wanted) / wanted) * 100
}
