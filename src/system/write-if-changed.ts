/**
 * The one way `system install` writes a file of its own (configuration, entry point, sudoers rule, reaper units):
 * whole, by rename, and only when what is there differs, so a second install reports `unchanged`.
 */
import fs from 'node:fs'

import {readTextIfExists, UnsafeFileError, writeTextAtomic} from '../core/json-file.js'

/** What an install did to one file (or folder, or group): the `items` of `system install --json`. */
export type WrittenItem = {what: string; path: string; action: 'created' | 'updated' | 'unchanged'}

/**
 * `file` holds `text` with `mode`, owned by one of `owners` (root's by default): left alone when it already does,
 * else written whole. A link or something not a file in its place counts as no file (created), and is replaced.
 */
export function writeIfChanged(what: string, file: string, text: string, mode: number, owners: readonly number[] = [0]): WrittenItem {
  const current = plainFileText(file)
  const info = current === null ? null : fs.lstatSync(file)
  if (current === text && info && owners.includes(info.uid) && (info.mode & 0o7777) === mode) return {what, path: file, action: 'unchanged'}
  writeTextAtomic(file, text, mode)
  return {what, path: file, action: current === null ? 'created' : 'updated'}
}

function plainFileText(file: string): string | null {
  try {
    return readTextIfExists(file)
  } catch (error) {
    if (error instanceof UnsafeFileError) return null
    throw error
  }
}
