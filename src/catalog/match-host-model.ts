import type {Catalog, HostModel} from './types.js'

const TOKEN_SPLIT = /[\s\-_]+/

/**
 * Recognises the GPU nvidia-smi reported. Matching is on whole tokens, so "NVIDIA GH200 480GB" never
 * counts as an "NVIDIA H200" (the original tool's substring match did exactly that). An exact smiName
 * wins; otherwise the longest smiName found as a run of tokens inside the probed name.
 */
export function matchHostModel(catalog: Catalog, smiName: string): HostModel | null {
  const probed = tokens(smiName)
  const probedText = probed.join(' ')
  let best: {host: HostModel; length: number} | null = null
  for (const host of catalog.hosts) {
    for (const known of host.smiNames) {
      const knownTokens = tokens(known)
      if (knownTokens.join(' ') === probedText) return host
      if (containsRun(probed, knownTokens) && (best === null || knownTokens.length > best.length)) {
        best = {host, length: knownTokens.length}
      }
    }
  }
  return best?.host ?? null
}

function tokens(name: string): string[] {
  return name.trim().toLowerCase().split(TOKEN_SPLIT).filter(Boolean)
}

function containsRun(haystack: readonly string[], needle: readonly string[]): boolean {
  if (needle.length === 0 || needle.length > haystack.length) return false
  for (let start = 0; start + needle.length <= haystack.length; start++) {
    if (needle.every((token, i) => haystack[start + i] === token)) return true
  }
  return false
}
