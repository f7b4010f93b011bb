import {randomBytes} from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'

import {StateError} from './errors.js'

/**
 * Reading and replacing files in folders others may write to (the team's state directory): a path is never
 * followed through a symlink planted there, a temporary file is never one somebody else made, and a mode is set
 * on the open descriptor, never on a path (design.md §7).
 */

/** Why a path was not read or written: never followed or acted on. */
export type UnsafeReason = 'symlink' | 'not-a-file' | 'not-a-folder' | 'foreign-owner' | 'others-may-write'

/** A path that is a symlink, not what it should be (a regular file, a folder), or owned by someone it must not be. */
export class UnsafeFileError extends StateError {
  readonly file: string
  readonly reason: UnsafeReason

  constructor(file: string, reason: UnsafeReason, detail = '') {
    super('UNSAFE_STATE_FILE', `${file} ${describeUnsafe(reason)}${detail}: not followed or used`, {
      fix: [`inspect it and move it away (ls -la ${file}; mv ${file} ${file}.bad); whoever planted it could redirect gpu-cosplay's writes`],
    })
    this.file = file
    this.reason = reason
  }
}

export function isUnsafeFileError(error: unknown): error is UnsafeFileError {
  return error instanceof UnsafeFileError
}

/** A file a listing skipped rather than follow or trust it, for `status` and `doctor` to report. */
export type RefusedFile = {readonly file: string; readonly reason: UnsafeReason; readonly message: string}

export function refusedFile(error: UnsafeFileError): RefusedFile {
  return {file: error.file, reason: error.reason, message: error.message}
}

function describeUnsafe(reason: UnsafeReason): string {
  switch (reason) {
    case 'symlink':
      return 'is a symlink'
    case 'not-a-file':
      return 'is not a regular file'
    case 'not-a-folder':
      return 'is not a folder'
    case 'others-may-write':
      return 'is writable by others than its owner'
    case 'foreign-owner':
      return 'belongs to someone it should not'
  }
}

/**
 * The mode a file gets in `folderMode`'s folder: 0666 in a world-writable one (the team's un-installed shared folder,
 * where teammates replace each other's records), else 0644.
 */
export function sharedFileMode(folderMode: number): number {
  return (folderMode & 0o002) !== 0 ? 0o666 : 0o644
}

export type WriteOptions = {
  /** the folder may be reached through a symlink (a user's own ~/.ssh); by default a symlinked folder is refused */
  readonly folderMayBeLink?: boolean
  /** give the file to this owner (root writing for a user), on the descriptor before it takes the name */
  readonly owner?: {readonly uid: number; readonly gid: number}
}

/**
 * Replaces `file` with `value` so that a reader, or a crash at any instant, sees either the old or the
 * new content, never half of it (see writeTextAtomic). The mode follows the folder (sharedFileMode).
 */
export function writeJsonAtomic(file: string, value: unknown): void {
  writeAtomic(file, `${JSON.stringify(value, null, 1)}\n`, sharedFileMode, {})
}

/**
 * Replaces `file` with `text`, readable with exactly `mode` (not cut by the umask): a temporary file of an
 * unpredictable name is created exclusively (never one that exists, never through a symlink), given its mode on
 * the descriptor, written and fsynced, renamed over `file` in the same folder, and the folder fsynced. On failure
 * the temporary file is removed.
 */
export function writeTextAtomic(file: string, text: string, mode: number, options: WriteOptions = {}): void {
  writeAtomic(file, text, () => mode, options)
}

function writeAtomic(file: string, text: string, modeIn: (folderMode: number) => number, options: WriteOptions): void {
  const dir = path.dirname(file)
  const dirFd = openFolder(dir, options.folderMayBeLink === true)
  try {
    const mode = modeIn(fs.fstatSync(dirFd).mode)
    const tmp = path.join(dir, `.${path.basename(file)}.${randomBytes(8).toString('hex')}.tmp`)
    const {O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW} = fs.constants
    const fd = fs.openSync(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
    try {
      try {
        if (options.owner) fs.fchownSync(fd, options.owner.uid, options.owner.gid)
        fs.fchmodSync(fd, mode)
        writeAll(fd, text)
        fs.fsyncSync(fd)
      } finally {
        fs.closeSync(fd)
      }
      fs.renameSync(tmp, file)
    } catch (error) {
      fs.rmSync(tmp, {force: true})
      throw error
    }
    fs.fsyncSync(dirFd)
  } finally {
    fs.closeSync(dirFd)
  }
}

function writeAll(fd: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8')
  for (let at = 0; at < bytes.length;) at += fs.writeSync(fd, bytes, at, bytes.length - at)
}

/** A folder opened for fsync: a symlink in its place is refused unless `followLink`. */
function openFolder(dir: string, followLink: boolean): number {
  const {O_RDONLY, O_DIRECTORY, O_NOFOLLOW} = fs.constants
  try {
    return fs.openSync(dir, O_RDONLY | O_DIRECTORY | (followLink ? 0 : O_NOFOLLOW))
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOTDIR') throw error
    throw new UnsafeFileError(dir, fs.lstatSync(dir).isSymbolicLink() ? 'symlink' : 'not-a-folder')
  }
}

export type ReadOptions = {
  /** the only owner trusted (root's uid in the engine); a file of another is refused */
  readonly owner?: number | null
  /** follow a symlink (a user's own config in their home); by default a symlink is refused */
  readonly followSymlinks?: boolean
  /** refuse a file its group or others may write (what root takes as its own word: the box's config, image pins) */
  readonly ownerWritesOnly?: boolean
}

/**
 * The file's text, or null when it does not exist. Opened without following a symlink and checked on the open
 * descriptor: a symlink, a FIFO or a folder, or a file of an untrusted owner throws UnsafeFileError and is never read.
 */
export function readTextIfExists(file: string, options: ReadOptions = {}): string | null {
  const {O_RDONLY, O_NOFOLLOW, O_NONBLOCK} = fs.constants
  let fd: number
  try {
    // O_NONBLOCK: a FIFO planted in a file's place must not hang the open
    fd = fs.openSync(file, O_RDONLY | O_NONBLOCK | (options.followSymlinks ? 0 : O_NOFOLLOW))
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return null
    if (code === 'ELOOP' && !options.followSymlinks) throw new UnsafeFileError(file, 'symlink')
    throw error
  }
  try {
    const info = fs.fstatSync(fd)
    if (!info.isFile()) throw new UnsafeFileError(file, 'not-a-file')
    if (options.owner !== undefined && options.owner !== null && info.uid !== options.owner) {
      throw new UnsafeFileError(file, 'foreign-owner', ` (uid ${info.uid}, only uid ${options.owner} is trusted here)`)
    }
    if (options.ownerWritesOnly && (info.mode & 0o022) !== 0) throw new UnsafeFileError(file, 'others-may-write', ` (mode ${(info.mode & 0o777).toString(8)})`)
    return fs.readFileSync(fd, 'utf8')
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * The file's JSON, validated by `schema`: null when it does not exist; otherwise the data, or why it is unusable
 * (empty, not JSON, or the first field the schema rejects), for the caller to turn into its own error. A file that
 * must not be read at all (readTextIfExists) throws UnsafeFileError instead.
 */
export function readJsonFile<T>(
  file: string,
  schema: {safeParse(raw: unknown): {success: true; data: T} | {success: false; error: {issues: readonly {path: readonly PropertyKey[]; message: string}[]}}},
  options: ReadOptions = {},
): {ok: true; data: T} | {ok: false; why: string; cause: unknown} | null {
  const text = readTextIfExists(file, options)
  if (text === null) return null
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (error) {
    return {ok: false, why: text.trim() === '' ? 'empty' : 'not valid JSON (truncated?)', cause: error}
  }
  const parsed = schema.safeParse(raw)
  if (parsed.success) return {ok: true, data: parsed.data}
  const issue = parsed.error.issues[0]
  return {ok: false, why: `field "${issue.path.map(String).join('.')}": ${issue.message}`, cause: parsed.error}
}
