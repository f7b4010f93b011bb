import fs from 'node:fs'
import path from 'node:path'

/**
 * Replaces `file` with `value` so that a reader, or a crash at any instant, sees either the old or the
 * new content, never half of it: write a temporary file, fsync it, rename it over, fsync the folder.
 */
export function writeJsonAtomic(file: string, value: unknown): void {
  const dir = path.dirname(file)
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.tmp`)
  const fd = fs.openSync(tmp, 'w', 0o666)
  try {
    fs.writeSync(fd, `${JSON.stringify(value, null, 1)}\n`)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  // Other users update the same files; umask must not lock them out.
  fs.chmodSync(tmp, 0o666)
  fs.renameSync(tmp, file)
  const dirFd = fs.openSync(dir, 'r')
  try {
    fs.fsyncSync(dirFd)
  } finally {
    fs.closeSync(dirFd)
  }
}

/** The file's text, or null when it does not exist. */
export function readTextIfExists(file: string): string | null {
  try {
    return fs.readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}
