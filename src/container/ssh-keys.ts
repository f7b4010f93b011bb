/**
 * The key pair used to reach session containers: the user's own ~/.ssh/id_ed25519 when it is there and
 * unencrypted, else an ed25519 pair generated once (ssh2's generator) into the state directory, 0600.
 * The user's public key (even an encrypted one's) is also authorised, so a plain `ssh` with their agent works.
 *
 * A whole team shares one state directory: `<state>/users/` is shared (1777: anyone creates their own folder in it,
 * nobody removes another's), each `<state>/users/<uid>/` and its `ssh/` are their user's alone (0700), keys 0600.
 */
import {lstatSync} from 'node:fs'
import {homedir} from 'node:os'
import {dirname, join} from 'node:path'
import {ensurePrivateDir, ensureSharedDir} from '../apply/state-dir.js'
import {CosplayError, ContainerError} from '../core/errors.js'
import type {StatePolicy} from '../core/state-policy.js'
import {readTextIfExists, writeTextAtomic} from '../core/json-file.js'
import {isUsableWithoutPassphrase, newEd25519Pair} from '../core/ssh-connection.js'
import {userSshDir, userSshKeyPath} from '../core/state-layout.js'

export type SshIdentity = {
  /** OpenSSH private key text, unencrypted, for ssh2 */
  readonly privateKey: string
  readonly privateKeyPath: string
  readonly publicKey: string
  readonly source: 'user' | 'generated'
  /** authorized_keys lines for the container: this identity's and, if different, the user's own */
  readonly authorizedKeys: readonly string[]
}

export type SshKeyOptions = {
  /** the user's own folder, <state>/users/<uid>; a generated pair lives in its ssh/. Its parent is the shared one. */
  userDir: string
  /** default os.homedir(); null: not ours to read (the engine reads the caller's keys as the caller: extraPublicKeys) */
  homeDir?: string | null
  /** more authorized_keys lines, e.g. the caller's own public keys */
  extraPublicKeys?: readonly string[]
  comment?: string
  /** when running as root on someone's behalf (sudo): the folders and keys we create become theirs */
  owner?: {uid: number; gid: number}
  /** the state directory's trust (the call context's): in the engine users/ is root's */
  trust: StatePolicy
}

export type KeyPair = {
  /** OpenSSH private key text, unencrypted, for ssh2 */
  readonly privateKey: string
  /** one authorized_keys line */
  readonly publicKey: string
}

export type KeyPairOptions = {
  comment: string
  /** when running as root on someone's behalf (sudo): the files we write become theirs */
  owner?: {uid: number; gid: number}
  /** prepares the folder; called only when a new pair is about to be written */
  beforeCreate?: () => void
}

/**
 * The unencrypted pair at `path` and `path.pub`, or a new ed25519 pair written there when either half is missing
 * or the private one is unusable (encrypted, damaged). The private file is left readable by its owner alone.
 * File errors are the caller's to explain.
 */
export function loadOrCreateKeyPair(path: string, options: KeyPairOptions): KeyPair {
  let privateKey = readTextIfExists(path)
  let publicKey = readTextIfExists(`${path}.pub`)?.trim() ?? null
  if (!privateKey || !publicKey || !isUsableWithoutPassphrase(privateKey)) {
    options.beforeCreate?.()
    const pair = newEd25519Pair(options.comment)
    privateKey = pair.privateKey
    publicKey = pair.publicKey
    // the public half first: a reader that finds the private file finds its partner too
    // owners are set on the open files: a path swapped for a link meanwhile is never followed
    writeTextAtomic(`${path}.pub`, `${publicKey}\n`, 0o644, {owner: options.owner})
    writeTextAtomic(path, privateKey, 0o600, {owner: options.owner})
  }
  // an existing file keeps the mode it was written with; ssh refuses (and we should not keep) a key others may read
  if ((lstatSync(path).mode & 0o077) !== 0) writeTextAtomic(path, privateKey, 0o600, {owner: options.owner})
  return {privateKey, publicKey}
}

export async function loadOrCreateSshIdentity(options: SshKeyOptions): Promise<SshIdentity> {
  const home = options.homeDir === undefined ? homedir() : options.homeDir
  const userPath = home === null ? null : join(home, '.ssh', 'id_ed25519')
  const userPrivate = userPath === null ? null : readTextIfExists(userPath)
  const userPublic = userPath === null ? null : (readTextIfExists(`${userPath}.pub`)?.trim() ?? null)
  const extra = options.extraPublicKeys ?? []
  if (userPath && userPrivate && userPublic && isUsableWithoutPassphrase(userPrivate)) {
    return {privateKey: userPrivate, privateKeyPath: userPath, publicKey: userPublic, source: 'user', authorizedKeys: unique([userPublic, ...extra])}
  }

  const dir = userSshDir(options.userDir)
  const path = userSshKeyPath(options.userDir)
  const shared = dirname(options.userDir)
  const owner = options.owner ?? {uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0}
  try {
    ensureSharedDir(shared, options.trust, {create: false})
    const {privateKey, publicKey} = loadOrCreateKeyPair(path, {
      comment: options.comment ?? 'gpu-cosplay',
      owner: options.owner,
      beforeCreate: () => {
        ensureSharedDir(shared, options.trust)
        ensurePrivateDir(options.userDir, owner, options.trust)
        ensurePrivateDir(dir, owner, options.trust)
      },
    })
    ensurePrivateDir(dir, owner, options.trust) // settled on the open folder (an older one may be looser)
    const authorizedKeys = unique([publicKey, ...(userPublic ? [userPublic] : []), ...extra])
    return {privateKey, privateKeyPath: path, publicKey, source: 'generated', authorizedKeys}
  } catch (error) {
    if (error instanceof CosplayError) throw error
    throw new ContainerError('SSH_KEY_UNAVAILABLE', `cannot create or read the ssh key ${path}`, {
      fix: [`check the permissions of ${dir}`],
      cause: error,
    })
  }
}

function unique(lines: readonly string[]): string[] {
  return [...new Set(lines)]
}
