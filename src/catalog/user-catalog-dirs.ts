import path from 'node:path'

import {HOST_ENV} from '../core/names.js'

/**
 * Where user catalog files live. $GPU_COSPLAY_CATALOG_DIR replaces the default rather than adding to it,
 * so tests and CI get a catalog that does not depend on the user's home directory.
 */
export function userCatalogDirs(env: Readonly<Record<string, string | undefined>>, homeDir: string): string[] {
  const explicit = env[HOST_ENV.catalogDir]
  if (explicit) return [explicit]
  const configHome = env.XDG_CONFIG_HOME || path.join(homeDir, '.config')
  return [path.join(configHome, 'gpu-cosplay', 'catalog.d')]
}
