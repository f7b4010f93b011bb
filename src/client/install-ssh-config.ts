import {join} from 'node:path'

import {readTextIfExists, writeTextAtomic} from '../core/json-file.js'
import {ensureClientKeyDir} from '../remote/client-key.js'

export type InstalledSshConfig = {
  /** the session's own file, rewritten on every install: a new port replaces the old one */
  readonly entryFile: string
  /** ~/.ssh/config, which includes every session file through one line */
  readonly configFile: string
  /** false when ~/.ssh/config already had the line */
  readonly includeAdded: boolean
}

/**
 * Writes the Host entry to ~/.ssh/gpu-cosplay/SESSION.conf and makes sure ~/.ssh/config starts with one
 * `Include` of that folder. Appending entries instead leaves a stale one behind each time a session comes back
 * on a new port, and ssh uses the first match. The Include goes first in the file: after a `Host` line it would
 * only apply inside that block. The path is absolute so that `ssh -F FILE` finds it too.
 */
export function installSshConfig(sshDir: string, session: string, entry: string): InstalledSshConfig {
  const folder = ensureClientKeyDir(sshDir)
  const entryFile = join(folder, `${session}.conf`)
  // ssh refuses a config that others may write
  writeTextAtomic(entryFile, `# written by gpu-cosplay ssh-config --install; rewritten on the next install\n${entry}\n`, 0o600)

  const configFile = join(sshDir, 'config')
  const include = `Include ${join(folder, '*.conf')}`
  // the user's own files: ~/.ssh (and their config) may be symlinks of a dotfiles set-up
  const current = readTextIfExists(configFile, {followSymlinks: true}) ?? ''
  const includeAdded = !current.split('\n').some((line) => line.trim() === include)
  if (includeAdded)
    writeTextAtomic(configFile, `${include}\n${current.length > 0 && !current.startsWith('\n') ? '\n' : ''}${current}`, 0o600, {folderMayBeLink: true})
  return {entryFile, configFile, includeAdded}
}
