/**
 * The user's `--env` values for `gpu-cosplay exec` (docker exec), kept beside the session's other private files in the
 * state directory: the container's Config.Env holds only gpu-cosplay's own values (the root entrypoint sees it), and
 * the shared book records the values as "(not recorded)". In the engine the file is root's; elsewhere its owner's.
 *
 * Created exclusively, never through a link, mode 0600 set on the descriptor; removed when the session ends (the
 * 'start-container' step's undo).
 */
import fs from 'node:fs'

import {StateError} from '../core/errors.js'
import {readTextIfExists} from '../core/json-file.js'

/** Writes the values (JSON); `owner` gives the file to the user root writes it for (elsewhere than in the engine). */
export function writeSessionEnvFile(file: string, env: Readonly<Record<string, string>>, owner: {readonly uid: number; readonly gid: number} | null): void {
  // a leftover of an earlier session of this name (ended by a crash before its undo) goes first: unlink follows no link
  fs.rmSync(file, {force: true})
  const {O_WRONLY, O_CREAT, O_EXCL, O_NOFOLLOW} = fs.constants
  const fd = fs.openSync(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600)
  try {
    if (owner) fs.fchownSync(fd, owner.uid, owner.gid)
    fs.fchmodSync(fd, 0o600)
    fs.writeFileSync(fd, `${JSON.stringify(env)}\n`)
    fs.fsyncSync(fd)
  } catch (error) {
    fs.closeSync(fd)
    fs.rmSync(file, {force: true})
    throw error
  }
  fs.closeSync(fd)
}

/**
 * The values, or null when the session has none (no --env, or a session started before this file existed). A link,
 * a non-file, a file of an untrusted owner (`trustedOwner`) or a damaged one is refused.
 */
export function readSessionEnvFile(file: string, trustedOwner: number | null): Record<string, string> | null {
  const text = readTextIfExists(file, {owner: trustedOwner})
  if (text === null) return null
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch {
    raw = null
  }
  const valid =
    raw !== null &&
    typeof raw === 'object' &&
    !Array.isArray(raw) &&
    Object.entries(raw).every(([name, value]) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && typeof value === 'string')
  if (!valid) {
    throw new StateError('SESSION_ENV_DAMAGED', `${file} is not the session's --env values`, {
      fix: [`move it away (the session's exec then runs without your --env values): mv ${file} ${file}.bad`],
    })
  }
  return raw as Record<string, string>
}

/** Removes the file; one already gone is fine. */
export function removeSessionEnvFile(file: string): void {
  fs.rmSync(file, {force: true})
}
