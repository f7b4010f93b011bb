import {lchownSync, mkdirSync} from 'node:fs'
import {join} from 'node:path'

import {knownHostsLine} from '../container/connect-hints.js'
import {writeTextAtomic} from '../core/json-file.js'
import {clientKeyDir} from '../remote/client-key.js'

/**
 * Pins a session's sshd host key for OpenSSH: one line under the entry's alias (its HostKeyAlias) in
 * ~/.ssh/gpu-cosplay/ALIAS.known_hosts, a file of the entry's own, so a later session on the same port (with host
 * keys of its own) never meets a stale line in ~/.ssh/known_hosts. `owner`: the files become theirs (root writing
 * for the user who ran sudo). Returns the file's path.
 */
export function writeSessionKnownHosts(sshDir: string, alias: string, hostKey: string, owner?: {readonly uid: number; readonly gid: number}): string {
  const dir = clientKeyDir(sshDir)
  const made = mkdirSync(dir, {recursive: true, mode: 0o700})
  if (owner && made !== undefined) lchownSync(dir, owner.uid, owner.gid)
  const file = join(dir, `${alias}.known_hosts`)
  // the owner is set on the open file; a folder swapped for a link is refused by the writer
  writeTextAtomic(file, `${knownHostsLine(alias, hostKey)}\n`, 0o600, {owner})
  return file
}
