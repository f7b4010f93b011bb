/**
 * The key pair used to reach session containers: the user's own ~/.ssh/id_ed25519 when it is there and
 * unencrypted, else an ed25519 pair generated once (ssh2's generator) into the state directory, 0600.
 * The user's public key (even an encrypted one's) is also authorised, so a plain `ssh` with their agent works.
 *
 * A whole team shares one state directory: `<state>/users/` is shared (1777: anyone creates their own folder in it,
 * nobody removes another's), each `<state>/users/<uid>/` and its `ssh/` are their user's alone (0700), keys 0600.
 */
import {chmod, chown, readFile, stat, writeFile} from 'node:fs/promises'
import {homedir} from 'node:os'
import {dirname, join} from 'node:path'
import ssh2 from 'ssh2'
import {ensurePrivateDir, ensureSharedDir} from '../apply/state-dir.js'
import {CosplayError, ContainerError} from '../core/errors.js'

const {utils} = ssh2

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
  /** default os.homedir() */
  homeDir?: string
  comment?: string
  /** when running as root on someone's behalf (sudo): the folders and keys we create become theirs */
  owner?: {uid: number; gid: number}
}

async function readIfExists(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
}

function isUsable(privateKey: string): boolean {
  const parsed = utils.parseKey(privateKey)
  return !(parsed instanceof Error) && !Array.isArray(parsed)
}

export async function loadOrCreateSshIdentity(options: SshKeyOptions): Promise<SshIdentity> {
  const home = options.homeDir ?? homedir()
  const userPath = join(home, '.ssh', 'id_ed25519')
  const userPrivate = await readIfExists(userPath)
  const userPublic = (await readIfExists(`${userPath}.pub`))?.trim() ?? null
  if (userPrivate && userPublic && isUsable(userPrivate)) {
    return {privateKey: userPrivate, privateKeyPath: userPath, publicKey: userPublic, source: 'user', authorizedKeys: [userPublic]}
  }

  const dir = join(options.userDir, 'ssh')
  const path = join(dir, 'id_ed25519')
  const shared = dirname(options.userDir)
  const owner = options.owner ?? {uid: process.getuid?.() ?? 0, gid: process.getgid?.() ?? 0}
  try {
    ensureSharedDir(shared, {create: false})
    let privateKey = await readIfExists(path)
    let publicKey = (await readIfExists(`${path}.pub`))?.trim() ?? null
    if (!privateKey || !publicKey || !isUsable(privateKey)) {
      ensureSharedDir(shared)
      ensurePrivateDir(options.userDir, owner)
      ensurePrivateDir(dir, owner)
      const pair = utils.generateKeyPairSync('ed25519', {comment: options.comment ?? 'gpu-cosplay'})
      privateKey = pair.private
      publicKey = pair.public.trim()
      await writeFile(path, privateKey, {mode: 0o600})
      await writeFile(`${path}.pub`, `${publicKey}\n`, {mode: 0o644})
      if (options.owner) for (const file of [path, `${path}.pub`]) await chown(file, options.owner.uid, options.owner.gid)
    }
    // an existing file keeps the mode it was written with; make sure nobody else can read the key
    if (((await stat(path)).mode & 0o077) !== 0) await chmod(path, 0o600)
    await chmod(dir, 0o700)
    const authorizedKeys = userPublic && userPublic !== publicKey ? [publicKey, userPublic] : [publicKey]
    return {privateKey, privateKeyPath: path, publicKey, source: 'generated', authorizedKeys}
  } catch (error) {
    if (error instanceof CosplayError) throw error
    throw new ContainerError('SSH_KEY_UNAVAILABLE', `cannot create or read the ssh key ${path}`, {
      fix: [`check the permissions of ${dir}`],
      cause: error,
    })
  }
}
