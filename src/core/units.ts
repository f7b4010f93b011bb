/** Unit conversions. Marketing "GB" is decimal; nvidia-smi and the CUDA runtime count binary MiB/GiB. */

export function round(value: number, digits = 1): number {
  const f = 10 ** digits
  return Math.round(value * f) / f
}

/** Signed relative error in percent, (actual - wanted) / wanted. */
export function errorPct(actual: number, wanted: number): number {
  return wanted === 0 ? 0 : ((actual - wanted) / wanted) * 100
}

/** '1g', '512m', '2GiB', '1073741824' (binary units; k, m, g, t) -> bytes; null when it is not a size. */
export function byteSizeOf(text: string): number | null {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(text)
  if (!match) return null
  const power = {'': 0, k: 1, m: 2, g: 3, t: 4}[match[2].toLowerCase() as '' | 'k' | 'm' | 'g' | 't']
  return Math.round(Number(match[1]) * 1024 ** power)
}
