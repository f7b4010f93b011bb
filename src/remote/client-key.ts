/**
 * The key this machine logs in to session containers on GPU boxes with: an ed25519 pair generated once into
 * ~/.ssh/gpu-cosplay/ (folder 0700, key 0600). Only its public half travels: the box adds it to the session
 * container's authorized_keys, so no private key ever leaves the machine it was made on (the box's own
 * session key may be the user's personal ~/.ssh/id_ed25519 there).
 */
import {chmodSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync} from 'node:fs'
import {hostname} from 'node:os'
import {join} from 'node:path'

import ssh2 from 'ssh2'

import {RemoteError} from './remote-error.js'

const {utils} = ssh2

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
    const existing = readPair(path)
    if (existing) {
      // a key file that others may read is refused by ssh (and should not be): keep it the user's alone
      if ((statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600)
      return existing
    }
    const pair = utils.generateKeyPairSync('ed25519', {comment: `gpu-cosplay client ${hostname()}`})
    // the public half first: a reader that finds the private file finds its partner too
    writeAtomically(`${path}.pub`, `${pair.public.trim()}\n`, 0o644)
    writeAtomically(path, pair.private, 0o600)
    return {privateKey: pair.private, privateKeyPath: path, publicKey: pair.public.trim()}
  } catch (error) {
    throw new RemoteError('CLIENT_KEY_UNAVAILABLE', `cannot create or read the client ssh key ${path}`, {
      fix: [`check the permissions of ${dir}`],
      cause: error,
    })
  }
}

function readPair(path: string): ClientKey | null {
  let privateKey: string
  let publicKey: string
  try {
    privateKey = readFileSync(path, 'utf8')
    publicKey = readFileSync(`${path}.pub`, 'utf8').trim()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  const parsed = utils.parseKey(privateKey)
  if (parsed instanceof Error || Array.isArray(parsed)) return null
  return {privateKey, privateKeyPath: path, publicKey}
}

function writeAtomically(file: string, text: string, mode: number): void {
  const tmp = `${file}.${process.pid}.tmp`
  writeFileSync(tmp, text, {mode})
  renameSync(tmp, file)
}
