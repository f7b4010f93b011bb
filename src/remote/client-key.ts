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

export function loadOrCreateClientKey(sshDir: string): ClientKey {
  const dir = clientKeyDir(sshDir)
  const path = join(dir, 'client_ed25519')
  try {
    mkdirSync(dir, {recursive: true, mode: 0o700})
    const {privateKey, publicKey} = loadOrCreateKeyPair(path, {comment: `gpu-cosplay client ${hostname()}`})
    return {privateKey, privateKeyPath: path, publicKey}
  } catch (error) {
    throw new RemoteError('CLIENT_KEY_UNAVAILABLE', `cannot create or read the client ssh key ${path}`, {
      fix: [`check the permissions of ${dir}`],
      cause: error,
    })
  }
}
