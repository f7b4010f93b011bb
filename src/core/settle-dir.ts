import fs from 'node:fs'

import {UnsafeFileError} from './json-file.js'

/** A folder as settleDir found it, with the changes it allows made on its descriptor. */
export type SettledDir = {
  readonly info: fs.Stats
  /** made by this call */
  readonly created: boolean
  chmod(mode: number): void
  chown(uid: number, gid: number): void
}

/**
 * Makes `dir` when it is missing (mkdir never follows a symlink in its place) and opens it without following one,
 * so that `settle` sees what is really there and changes its owner or mode on the descriptor (fchown, fchmod),
 * never through a path somebody could swap. A symlink or a non-folder throws UnsafeFileError and is left alone.
 * Null when it is missing and `create` is false. The folder's parents must exist.
 */
export function settleDir<T>(dir: string, options: {readonly create: boolean}, settle: (found: SettledDir) => T): T | null {
  let created = false
  if (options.create) {
    try {
      fs.mkdirSync(dir, {mode: 0o700}) // 0700 until settle gives it its mode: nobody gets in meanwhile
      created = true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
  const {O_RDONLY, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK} = fs.constants
  let fd: number
  try {
    fd = fs.openSync(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT' && !options.create) return null
    if (code === 'EACCES') return settle(unreadable(dir, created))
    if (code !== 'ENOTDIR' && code !== 'ELOOP') throw error
    throw new UnsafeFileError(dir, fs.lstatSync(dir).isSymbolicLink() ? 'symlink' : 'not-a-folder')
  }
  try {
    return settle({
      info: fs.fstatSync(fd),
      created,
      chmod: (mode) => fs.fchmodSync(fd, mode),
      chown: (uid, gid) => fs.fchownSync(fd, uid, gid),
    })
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * A folder we may not list (another user's 0700; root never gets here): seen with lstat. Changing it goes by path,
 * which only its owner, never a privileged process, can do: a swap could only redirect them to what they own.
 */
function unreadable(dir: string, created: boolean): SettledDir {
  const info = fs.lstatSync(dir)
  if (!info.isDirectory()) throw new UnsafeFileError(dir, info.isSymbolicLink() ? 'symlink' : 'not-a-folder')
  return {
    info,
    created,
    chmod: (mode) => fs.chmodSync(dir, mode),
    chown: (uid, gid) => fs.lchownSync(dir, uid, gid),
  }
}

/** settleDir that leaves `dir` owned by `owner` (when given) with exactly `mode`. */
export function ensureDirMode(dir: string, mode: number, owner?: {readonly uid: number; readonly gid: number}): void {
  settleDir(dir, {create: true}, ({info, chmod, chown}) => {
    if (owner && (info.uid !== owner.uid || info.gid !== owner.gid)) chown(owner.uid, owner.gid)
    if ((info.mode & 0o7777) !== mode) chmod(mode)
  })
}
