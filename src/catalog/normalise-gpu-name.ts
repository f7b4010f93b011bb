/**
 * Folds the ways people write a GPU name onto one form, so "RTX 3090 Ti", "rtx-3090-ti", "3090ti" and
 * "NVIDIA GeForce RTX 3090 Ti" meet. Brand words are dropped only at the front: they never tell two cards
 * apart, while suffixes ("ti", "super", "16gb") always do and are kept.
 */
const SEPARATORS = /[\s\-_.]+/g
const BRAND_PREFIX = /^(?:nvidia|geforce|rtx|gtx|tesla|quadro)+/
// "16GB" and "16g" both appear in aliases; fold them so neither spelling is a miss.
const SIZE_SUFFIX = /(\d)gb/g

export function normaliseGpuName(name: string): string {
  return name.toLowerCase().replace(SEPARATORS, '').replace(BRAND_PREFIX, '').replace(SIZE_SUFFIX, '$1g')
}
