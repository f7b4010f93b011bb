/**
 * What `remote install` pushes: the built CLI (dist, bin, catalog, docker, runtime-hooks, package.json) and the
 * node_modules its runtime dependencies need (the `dependencies` closure of package.json, nothing from
 * devDependencies), as paths relative to the package root.
 */
import {existsSync, readFileSync} from 'node:fs'
import {dirname, join, relative} from 'node:path'

const BUNDLE_ROOTS = ['package.json', 'bin', 'dist', 'catalog', 'docker', 'runtime-hooks']

export function bundlePaths(root: string): string[] {
  const missing = BUNDLE_ROOTS.filter((path) => !existsSync(join(root, path)))
  if (missing.length > 0) throw new Error(`the package at ${root} lacks ${missing.join(', ')} (run npm run build)`)
  return [...BUNDLE_ROOTS, ...dependencyDirs(root).map((dir) => relative(root, dir))]
}

/** Every package folder the runtime dependencies resolve to, Node's way (nearest node_modules up the tree). */
export function dependencyDirs(root: string): string[] {
  const seen = new Set<string>()
  const visit = (fromDir: string, name: string, optional: boolean) => {
    const dir = resolvePackageDir(fromDir, name, root)
    if (dir === null) {
      if (optional) return
      throw new Error(`runtime dependency ${name} (needed by ${relative(root, fromDir) || 'gpu-cosplay'}) is not installed`)
    }
    if (seen.has(dir)) return
    seen.add(dir)
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>
      optionalDependencies?: Record<string, string>
    }
    for (const dep of Object.keys(manifest.dependencies ?? {})) visit(dir, dep, false)
    for (const dep of Object.keys(manifest.optionalDependencies ?? {})) visit(dir, dep, true)
  }
  const top = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {dependencies?: Record<string, string>}
  for (const dep of Object.keys(top.dependencies ?? {})) visit(root, dep, false)
  // a folder inside another chosen folder travels with it
  const dirs = [...seen].sort()
  return dirs.filter((dir) => !dirs.some((other) => other !== dir && dir.startsWith(`${other}/`)))
}

function resolvePackageDir(fromDir: string, name: string, root: string): string | null {
  for (let dir = fromDir; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name)
    if (existsSync(join(candidate, 'package.json'))) return candidate
    if (dir === root || !dir.startsWith(root)) return null
  }
}
