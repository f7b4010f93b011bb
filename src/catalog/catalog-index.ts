import type {Catalog, HostModel, Target} from './types.js'
import {normaliseGpuName} from './normalise-gpu-name.js'

type Named = {readonly key: string; readonly name: string; readonly aliases: readonly string[]}

/** Normalised spelling -> entry. Keys and aliases win over display names, which real cards share. */
export type NameIndex<T> = ReadonlyMap<string, T>

export type CatalogIndex = {readonly targets: NameIndex<Target>; readonly hosts: NameIndex<HostModel>}

const cache = new WeakMap<Catalog, CatalogIndex>()

/** Built once per catalog object: `resolve*` runs per call, the catalog does not change under it. */
export function indexCatalog(catalog: Catalog): CatalogIndex {
  let index = cache.get(catalog)
  if (!index) {
    index = {targets: indexByName(catalog.targets), hosts: indexByName(catalog.hosts)}
    cache.set(catalog, index)
  }
  return index
}

export function indexByName<T extends Named>(entries: readonly T[]): NameIndex<T> {
  const index = new Map<string, T>()
  for (const entry of entries) {
    for (const spelling of [entry.key, ...entry.aliases]) {
      const normal = normaliseGpuName(spelling)
      if (!index.has(normal)) index.set(normal, entry)
    }
  }
  for (const entry of entries) {
    const normal = normaliseGpuName(entry.name)
    if (!index.has(normal)) index.set(normal, entry)
  }
  return index
}

/** Pairs of entries that claim the same normalised key or alias: [spelling, first key, second key]. */
export function findAliasClashes(entries: readonly Named[]): Array<[string, string, string]> {
  const owner = new Map<string, string>()
  const clashes: Array<[string, string, string]> = []
  for (const entry of entries) {
    for (const spelling of [entry.key, ...entry.aliases]) {
      const normal = normaliseGpuName(spelling)
      const first = owner.get(normal)
      if (first === undefined) owner.set(normal, entry.key)
      else if (first !== entry.key) clashes.push([spelling, first, entry.key])
    }
  }
  return clashes
}
