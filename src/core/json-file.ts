import fs from 'node:fs'
import path from 'node:path'

/**
 * Replaces `file` with `value` so that a reader, or a crash at any instant, sees either the old or the
 * new content, never half of it (see writeTextAtomic).
 */
export function writeJsonAtomic(file: string, value: unknown): void {
  // Other users update the same files; umask must not lock them out.
  writeTextAtomic(file, `${JSON.stringify(value, null, 1)}\n`, 0o666)
}

/**
 * Replaces `file` with `text`, readable with exactly `mode` (not cut by the umask): write a temporary file
 * created with that mode, fsync it, rename it over, fsync the folder.
 */
export function writeTextAtomic(file: string, text: string, mode: number): void {
  const dir = path.dirname(file)
  const tmp = path.join(dir, `.${path.basename(file)}.${process.pid}.tmp`)
  const fd = fs.openSync(tmp, 'w', mode)
  try {
    fs.writeSync(fd, text)
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
  fs.chmodSync(tmp, mode)
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

/**
 * The file's JSON, validated by `schema`: null when it does not exist; otherwise the data, or why it is unusable
 * (empty, not JSON, or the first field the schema rejects), for the caller to turn into its own error.
 */
export function readJsonFile<T>(
  file: string,
  schema: {safeParse(raw: unknown): {success: true; data: T} | {success: false; error: {issues: readonly {path: readonly PropertyKey[]; message: string}[]}}},
): {ok: true; data: T} | {ok: false; why: string; cause: unknown} | null {
  const text = readTextIfExists(file)
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
