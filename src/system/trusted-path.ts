/**
 * What root may run or read on a user's behalf must be root's alone: the file, every folder above it, and (for the
 * package) everything inside. Otherwise whoever can write any of them chooses what root runs.
 */
import fs from 'node:fs'
import path from 'node:path'

/**
 * Why `target` is not root's alone, or null when it is. A sticky world-writable folder (/tmp) above it is not fine:
 * the sticky bit only keeps others from removing what is there, and whoever made a folder under /tmp first (before
 * root did, or instead) owns it; a program named under /tmp is one anyone may have put there.
 */
export function whyNotRootOnly(target: string): string | null {
  let real: string
  try {
    real = fs.realpathSync(target)
  } catch (error) {
    return `${target} does not exist (${(error as NodeJS.ErrnoException).code ?? 'error'})`
  }
  for (let dir = path.dirname(real); ; dir = path.dirname(dir)) {
    const why = whyNotRootsEntry(dir, fs.lstatSync(dir))
    if (why) return `${why} (above ${target})`
    if (dir === path.dirname(dir)) break
  }
  return whyNotRootsEntry(real, fs.lstatSync(real))
}

/** whyNotRootOnly for a folder and everything in it (symlinks inside are checked as links, not followed). */
export function whyTreeNotRootOnly(root: string): string | null {
  const top = whyNotRootOnly(root)
  if (top) return top
  const pending = [fs.realpathSync(root)]
  while (pending.length > 0) {
    const dir = pending.pop()!
    for (const entry of fs.readdirSync(dir, {withFileTypes: true})) {
      const full = path.join(dir, entry.name)
      const why = whyNotRootsEntry(full, fs.lstatSync(full))
      if (why) return why
      if (entry.isDirectory()) pending.push(full)
    }
  }
  return null
}

/** Why this entry is not root's alone: owned by root and written by root alone (sticky or not). */
export function whyNotRootsEntry(file: string, info: fs.Stats): string | null {
  if (info.uid !== 0) return `${file} belongs to uid ${info.uid}, not root`
  if (info.isSymbolicLink()) return null
  if ((info.mode & 0o022) !== 0) return `${file} is writable by others than root (mode ${(info.mode & 0o7777).toString(8)})`
  return null
}
