import {existsSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {fileURLToPath} from 'node:url'

let cached: string | null = null

/** The installed package's root (catalog/, docker/, runtime-hooks/ live there), from the bundle or from src/ under tests. */
export function packageRoot(): string {
  if (cached) return cached
  let dir = dirname(fileURLToPath(import.meta.url))
  while (!existsSync(join(dir, 'package.json')) || !existsSync(join(dir, 'catalog'))) {
    const parent = dirname(dir)
    if (parent === dir) throw new Error('gpu-cosplay: cannot find the package root (catalog/ next to package.json)')
    dir = parent
  }
  cached = dir
  return dir
}
