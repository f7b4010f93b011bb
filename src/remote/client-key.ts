/**
 * The key this machine logs in to session containers on GPU boxes with: an ed25519 pair generated once into
 * ~/.ssh/gpu-cosplay/ (folder 0700, key 0600). Only its public half travels: the box adds it to the session
 * container's authorized_keys, so no private key ever leaves the machine it was made on (the box's own
 * session key may be the user's personal ~/.ssh/id_ed25519 there).
 */
import {mkdirSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'

import {loadOrCreateKeyPair} from '../container/ssh-keys.js'
import {settleDir} from '../core/settle-dir.js'
import {RemoteError} from './remote-error.js'

export type ClientKey = {
  /** OpenSSH private key text, unencrypted, for ssh2 */
  readonly privateKey: string
  /** for IdentityFile in a Host entry */
  readonly privateKeyPath: string
  /** one authorized_keys line */
  readonly publicKey: string
}

export function clientKeyDir(sshDir: string): string {
  return join(sshDir, 'gpu-cosplay')
}

/**
 * ~/.ssh/gpu-cosplay, made 0700 when missing. A symlink or a file in its place, or a folder of someone else's, is
 * refused (UnsafeFileError, RemoteError): keys and host entries are never written where another user could read or
 * swap them. ~/.ssh itself may be a symlink (a dotfiles set-up).
 */
export function ensureClientKeyDir(sshDir: string): string {
  const dir = clientKeyDir(sshDir)
  mkdirSync(sshDir, {recursive: true, mode: 0o700})
  settleDir(dir, {create: true}, ({info, created, chmod}) => {
    const uid = process.getuid?.()
    if (uid !== undefined && info.uid !== uid) {
      throw new RemoteError('CLIENT_KEY_UNAVAILABLE', `${dir} belongs to uid ${info.uid}, not to you (uid ${uid})`, {
        fix: [`move it away: mv ${dir} ${dir}.bad`],
      })
    }
    if (created) chmod(0o700)
  })
  return dir
}

export function loadOrCreateClientKey(sshDir: string): ClientKey {
  const dir = clientKeyDir(sshDir)
  const path = join(dir, 'client_ed25519')
  try {
    ensureClientKeyDir(sshDir)
    const {privateKey, publicKey} = loadOrCreateKeyPair(path, {comment: `gpu-cosplay client ${hostname()}`})
    return {privateKey, privateKeyPath: path, publicKey}
  } catch (error) {
    if (error instanceof RemoteError) throw error
    throw new RemoteError('CLIENT_KEY_UNAVAILABLE', `cannot create or read the client ssh key ${path}`, {
      fix: [`check the permissions of ${dir}`],
      cause: error,
    })
  }
}
