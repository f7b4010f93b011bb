/**
 * The key pair used to reach session containers: the user's own ~/.ssh/id_ed25519 when it is there and
 * unencrypted, else an ed25519 pair generated once (ssh2's generator) into the state directory, 0600.
 * The user's public key (even an encrypted one's) is also authorised, so a plain `ssh` with their agent works.
 *
 * A whole team shares one state directory: `<state>/users/` is shared (1777: anyone creates their own folder in it,
 * nobody removes another's), each `<state>/users/<uid>/` and its `ssh/` are their user's alone (0700), keys 0600.
 */
import {chmod, chown, mkdir, readFile, stat, writeFile} from 'node:fs/promises'
import {homedir} from 'node:os'
import {dirname, join} from 'node:path'
import ssh2 from 'ssh2'
import {CosplayError, ContainerError, StateError} from '../core/errors.js'

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
  stateDir: string
  /** default os.homedir() */
  homeDir?: string
  comment?: string
  /** when running as root on someone's behalf (sudo): the folders and keys we create become theirs */
  owner?: {uid: number; gid: number}
}

/** sticky and writable by all, like /tmp */
const SHARED_MODE = 0o1777

function errnoOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code
}

/**
 * `<state>/users/`, shared. Missing: created only when `create` (a key is about to be written). A private one left by
 * an older version is opened up when it is ours (or we are root), else the user is told the command that fixes it.
 */
async function ensureSharedFolder(dir: string, create: boolean): Promise<void> {
  let info
  try {
    info = await stat(dir)
  } catch (error) {
    if (errnoOf(error) !== 'ENOENT' || !create) throw error
    await mkdir(dirname(dir), {recursive: true})
    try {
      await mkdir(dir)
    } catch (error) {
      if (errnoOf(error) !== 'EEXIST') throw error
    }
    info = await stat(dir)
  }
  if ((info.mode & 0o7777) === SHARED_MODE) return
  const uid = process.getuid?.() ?? -1
  if (info.uid === uid || uid === 0) {
    await chmod(dir, SHARED_MODE) // a new folder too: mkdir's mode is cut by the umask
    return
  }
  throw new StateError('STATE_DIR_NOT_SHARED', `${dir} is private to uid ${info.uid} (mode ${(info.mode & 0o7777).toString(8)}), so other users cannot keep their ssh keys there`, {
    exit: 4,
    fix: [`sudo chmod 1777 ${dir}`],
  })
}

/** A folder of this user's only: created 0700; an existing one of theirs is made 0700 again. */
async function ensurePrivateFolder(dir: string, owner: SshKeyOptions['owner']): Promise<void> {
  try {
    await mkdir(dir, {mode: 0o700})
    if (owner) await chown(dir, owner.uid, owner.gid)
  } catch (error) {
    if (errnoOf(error) !== 'EEXIST') throw error
  }
  await chmod(dir, 0o700)
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

  const dir = join(options.stateDir, 'ssh')
  const path = join(dir, 'id_ed25519')
  const shared = dirname(options.stateDir)
  try {
    await ensureSharedFolder(shared, false).catch((error) => {
      if (errnoOf(error) !== 'ENOENT') throw error
    })
    let privateKey = await readIfExists(path)
    let publicKey = (await readIfExists(`${path}.pub`))?.trim() ?? null
    if (!privateKey || !publicKey || !isUsable(privateKey)) {
      await ensureSharedFolder(shared, true)
      await ensurePrivateFolder(options.stateDir, options.owner)
      await ensurePrivateFolder(dir, options.owner)
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
