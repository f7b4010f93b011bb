import {join} from 'node:path'

import {loadCatalog} from '../../../src/catalog/load-catalog.js'
import {resolveHostModel, resolveTarget} from '../../../src/catalog/resolve-target.js'
import type {Catalog} from '../../../src/catalog/types.js'

let catalog: Catalog | null = null

/** The real built-in catalog, no user files: planner tests check the product's own numbers. */
export function builtinCatalog(): Catalog {
  catalog ??= loadCatalog({builtinDir: join(process.cwd(), 'catalog'), userDirs: []})
  return catalog
}

export const target = (name: string) => resolveTarget(builtinCatalog(), name)
export const hostModel = (name: string) => resolveHostModel(builtinCatalog(), name)
