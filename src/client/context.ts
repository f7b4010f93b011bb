/**
 * The command edge: the one place that picks implementations (local executor, the real nvidia-smi or
 * the simulator named by GPU_COSPLAY_NVIDIA_SMI) and reads the environment for the layers.
 */
import {homedir} from 'node:os'
import {join} from 'node:path'

import {openCatalog} from '../catalog/open-catalog.js'
import type {Catalog} from '../catalog/types.js'
import {userCatalogDirs} from '../catalog/user-catalog-dirs.js'
import {LocalExecutor} from '../core/local-executor.js'
import {packageRoot} from '../core/package-root.js'
import {Smi, smiPathFrom} from '../host/smi.js'

let catalog: Promise<Catalog> | null = null

export function currentCatalog(): Promise<Catalog> {
  const root = packageRoot()
  catalog ??= openCatalog({
    builtinDir: join(root, 'catalog'),
    userDirs: userCatalogDirs(process.env, homedir()),
    compiledFile: join(root, 'dist', 'catalog.json'),
  })
  return catalog
}

export function localSmi(options: {sudo?: boolean} = {}): Smi {
  return new Smi(new LocalExecutor(), {path: smiPathFrom(process.env), sudo: options.sudo ?? false})
}
