import fs from 'node:fs'
import path from 'node:path'

import type {Catalog} from './types.js'

/** What `npm run build` writes: the built-in catalog already validated, and the sources it came from. */
export type CompiledCatalog = {
  readonly version: 1
  readonly sources: readonly {readonly file: string; readonly size: number; readonly mtimeMs: number}[]
  readonly catalog: Catalog
}

export type OpenCatalogOptions = {builtinDir: string; userDirs: string[]; compiledFile: string}

/**
 * The catalog for a command. Start-up is most of what `ls` costs, so the common case (no user files,
 * build output fresh) reads one JSON file and never loads the YAML parser or the schema library.
 * Anything else goes through the full loader, which validates every file.
 */
export async function openCatalog(options: OpenCatalogOptions): Promise<Catalog> {
  if (!options.userDirs.some(hasCatalogFiles)) {
    const compiled = readFreshCompiled(options.compiledFile, options.builtinDir)
    if (compiled) return compiled
  }
  const {loadCatalog} = await import('./load-catalog.js')
  return loadCatalog({builtinDir: options.builtinDir, userDirs: options.userDirs})
}

export function catalogSources(builtinDir: string): CompiledCatalog['sources'] {
  return fs
    .readdirSync(builtinDir)
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .map((file) => {
      const stat = fs.statSync(path.join(builtinDir, file))
      return {file, size: stat.size, mtimeMs: stat.mtimeMs}
    })
}

function readFreshCompiled(compiledFile: string, builtinDir: string): Catalog | null {
  let compiled: CompiledCatalog
  try {
    compiled = JSON.parse(fs.readFileSync(compiledFile, 'utf8')) as CompiledCatalog
  } catch {
    return null
  }
  // An edited catalog/*.yaml must win over a stale build.
  const now = catalogSources(builtinDir)
  const fresh =
    compiled.version === 1 &&
    now.length === compiled.sources.length &&
    now.every((s, i) => s.file === compiled.sources[i].file && s.size === compiled.sources[i].size && s.mtimeMs === compiled.sources[i].mtimeMs)
  if (!fresh) return null
  return {...compiled.catalog, files: compiled.sources.map((s) => path.join(builtinDir, s.file))}
}

function hasCatalogFiles(dir: string): boolean {
  try {
    return fs.readdirSync(dir).some((name) => /\.ya?ml$/.test(name))
  } catch {
    return false
  }
}
