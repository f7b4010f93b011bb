import {distance} from 'fastest-levenshtein'

import {InputError} from '../core/errors.js'
import {indexCatalog, type NameIndex} from './catalog-index.js'
import {normaliseGpuName} from './normalise-gpu-name.js'
import type {Catalog, HostModel, Target} from './types.js'

// Commands find every name lookup in one module.
export {matchHostModel} from './match-host-model.js'

const MAX_SUGGESTIONS = 3

/** Finds the target a user typed: key, alias or display name, in any of the usual spellings. */
export function resolveTarget(catalog: Catalog, query: string): Target {
  const index = indexCatalog(catalog).targets
  const found = index.get(normaliseGpuName(query))
  if (found) return found
  throw new InputError('UNKNOWN_GPU', `unknown GPU "${query}"`, {
    fix: [suggestionLine(index, query, 'gpu-cosplay ls lists all')],
  })
}

/** Finds a host model by key, alias or name, for planning against a GPU this machine does not have. */
export function resolveHostModel(catalog: Catalog, query: string): HostModel {
  const index = indexCatalog(catalog).hosts
  const found = index.get(normaliseGpuName(query))
  if (found) return found
  throw new InputError('UNKNOWN_HOST_MODEL', `unknown host GPU model "${query}"`, {
    fix: [suggestionLine(index, query, `known: ${uniqueKeys(index).join(', ')}`)],
  })
}

function suggestionLine<T extends {readonly key: string}>(index: NameIndex<T>, query: string, tail: string): string {
  const closest = closestKeys(index, normaliseGpuName(query))
  return closest.length === 0 ? tail : `did you mean: ${closest.join(', ')}? (${tail})`
}

/** Up to three entry keys whose nearest spelling is closest to the query; ties keep catalog order. */
function closestKeys<T extends {readonly key: string}>(index: NameIndex<T>, normalQuery: string): string[] {
  const best = new Map<string, number>()
  for (const [spelling, entry] of index) {
    const d = distance(normalQuery, spelling)
    const previous = best.get(entry.key)
    if (previous === undefined || d < previous) best.set(entry.key, d)
  }
  // Beyond this a "suggestion" is noise: half the query changed.
  const limit = Math.max(2, Math.ceil(normalQuery.length / 2))
  return [...best]
    .filter(([, d]) => d <= limit)
    .sort((a, b) => a[1] - b[1])
    .slice(0, MAX_SUGGESTIONS)
    .map(([key]) => key)
}

function uniqueKeys<T extends {readonly key: string}>(index: NameIndex<T>): string[] {
  return [...new Set([...index.values()].map((entry) => entry.key))]
}
