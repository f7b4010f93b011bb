import {loadCatalog} from './load-catalog.js'
import {catalogSources, type CompiledCatalog} from './open-catalog.js'

/** Run by `npm run build`: validates the built-in catalog once and stores it as JSON for fast start-up. */
export function compileCatalog(builtinDir: string): CompiledCatalog {
  return {version: 1, sources: catalogSources(builtinDir), catalog: loadCatalog({builtinDir, userDirs: []})}
}
