import fs from 'node:fs'
import path from 'node:path'

import {StateError} from '../core/errors.js'
import {HOST_ENV, SHARED_STATE_DIR} from '../core/names.js'

export {SHARED_STATE_DIR}

export type StateDir = {
  readonly dir: string
  /** false when we fell back to a per-user folder: other users' sessions are invisible from here */
  readonly isShared: boolean
  readonly warning: string | null
}

/** GPU_COSPLAY_STATE_DIR, else the shared folder, else a per-user folder with a warning. Creates what is missing. */
export function resolveStateDir(env: Readonly<Record<string, string | undefined>>, homeDir: string): StateDir {
  const explicit = env[HOST_ENV.stateDir]
  if (explicit) {
    ensureWritable(explicit, false)
    return {dir: explicit, isShared: true, warning: null}
  }
  try {
    ensureWritable(SHARED_STATE_DIR, true)
    return {dir: SHARED_STATE_DIR, isShared: true, warning: null}
  } catch {
    const personal = path.join(env.XDG_STATE_HOME || path.join(homeDir, '.local', 'state'), 'gpu-cosplay')
    ensureWritable(personal, false)
    return {
      dir: personal,
      isShared: false,
      warning: `${SHARED_STATE_DIR} is not writable, so state is kept in ${personal}: other users' sessions on this GPU are not visible`,
    }
  }
}

/**
 * Where state is kept, for commands that only read (`plan`, `ps`, `status`, `doctor`): the same choice as
 * resolveStateDir, but nothing is created. Null when no state directory exists yet (nothing was ever done).
 */
export function findStateDir(env: Readonly<Record<string, string | undefined>>, homeDir: string): StateDir | null {
  const explicit = env[HOST_ENV.stateDir]
  if (explicit) return fs.existsSync(explicit) ? {dir: explicit, isShared: true, warning: null} : null
  if (sharedIsUsable()) return {dir: SHARED_STATE_DIR, isShared: true, warning: null}
  const personal = path.join(env.XDG_STATE_HOME || path.join(homeDir, '.local', 'state'), 'gpu-cosplay')
  if (fs.existsSync(personal)) return {dir: personal, isShared: false, warning: null}
  return fs.existsSync(SHARED_STATE_DIR) ? {dir: SHARED_STATE_DIR, isShared: true, warning: null} : null
}

/**
 * Whether resolveStateDir would take the shared folder: its gpus/ and sessions/ are writable folders (an admin may
 * have made the top folder 0755 and those 0777), or it is writable itself, so they can be made.
 */
function sharedIsUsable(): boolean {
  return ['gpus', 'sessions'].every((sub) => isWritableDir(path.join(SHARED_STATE_DIR, sub))) || isWritableDir(SHARED_STATE_DIR)
}

function isWritableDir(dir: string): boolean {
  try {
    fs.accessSync(dir, fs.constants.W_OK)
    return fs.statSync(dir).isDirectory()
  } catch {
    return false
  }
}

function ensureWritable(dir: string, shared: boolean): void {
  try {
    if (!fs.existsSync(dir)) {
      fs.mkdirSync(dir, {recursive: true})
      // Teammates must be able to update the same GPU's book; the tool, not file modes, enforces ownership.
      if (shared) fs.chmodSync(dir, 0o1777)
    }
    for (const sub of ['gpus', 'sessions']) {
      const subDir = path.join(dir, sub)
      if (!fs.existsSync(subDir)) {
        fs.mkdirSync(subDir)
        fs.chmodSync(subDir, 0o777)
      }
    }
    for (const sub of ['gpus', 'sessions']) {
      const subDir = path.join(dir, sub)
      if (!fs.statSync(subDir).isDirectory()) throw Object.assign(new Error(`${subDir} is not a folder`), {notAFolder: true})
      fs.accessSync(subDir, fs.constants.W_OK)
    }
  } catch (error) {
    if ((error as {notAFolder?: boolean}).notAFolder) {
      throw new StateError('STATE_DIR_DAMAGED', `state directory ${dir} is damaged: ${(error as Error).message}`, {
        cause: error,
        fix: [`move the file away (its gpus/ and sessions/ must be folders), e.g. mv ${dir}/gpus ${dir}/gpus.bad`],
      })
    }
    throw new StateError('STATE_DIR_NOT_WRITABLE', `state directory ${dir} is not writable (${(error as NodeJS.ErrnoException).code ?? 'error'})`, {
      cause: error,
      exit: 4,
      fix: [`make it writable for your team (e.g. sudo mkdir -p ${dir} && sudo chmod 1777 ${dir})`, `or set ${HOST_ENV.stateDir} to a folder you can write`],
    })
  }
}

export function userDirOf(stateDir: string, uid: number): string {
  return path.join(stateDir, 'users', String(uid))
}

/**
 * `<state>/users/<uid>`: a user's own folder (0700) in the team's shared state directory, for their ssh key and
 * their sessions' MPS pipes. `<state>/users/` itself is shared like the state directory: 1777, so everyone can
 * make their folder there and nobody can remove another's. Created as the owner when we run as root (sudo).
 */
export function ensureUserDir(stateDir: string, owner: {readonly uid: number; readonly gid: number}): string {
  const mine = userDirOf(stateDir, owner.uid)
  ensureSharedDir(path.dirname(mine))
  ensurePrivateDir(mine, owner)
  return mine
}

/** A folder of the user's own under theirs (0700), e.g. one session's MPS pipe directory. */
export function ensurePrivateDir(dir: string, owner: {readonly uid: number; readonly gid: number}): void {
  try {
    fs.mkdirSync(dir, {mode: 0o700})
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
  const info = fs.statSync(dir)
  if (!info.isDirectory()) throw new StateError('STATE_DIR_DAMAGED', `${dir} is not a folder`, {fix: [`move it away: mv ${dir} ${dir}.bad`]})
  if (info.uid !== owner.uid) {
    if (process.getuid?.() !== 0) {
      throw new StateError('STATE_DIR_NOT_OWNED', `${dir} belongs to uid ${info.uid}, not to you (uid ${owner.uid})`, {
        exit: 4,
        fix: [`sudo chown ${owner.uid}:${owner.gid} ${dir}`],
      })
    }
    fs.chownSync(dir, owner.uid, owner.gid)
  }
  if ((info.mode & 0o777) !== 0o700) fs.chmodSync(dir, 0o700)
}

/**
 * A folder every user of the box creates their own folder in (1777, like /tmp). Missing: created unless
 * `create` is false. A private one left by an older version is opened up when it is ours (or we are root).
 */
export function ensureSharedDir(dir: string, options: {create: boolean} = {create: true}): void {
  if (!fs.existsSync(dir)) {
    if (!options.create) return
    fs.mkdirSync(path.dirname(dir), {recursive: true})
    try {
      fs.mkdirSync(dir)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
  const info = fs.statSync(dir)
  if ((info.mode & 0o7777) === 0o1777) return
  const uid = process.getuid?.() ?? -1
  if (info.uid === uid || uid === 0) {
    fs.chmodSync(dir, 0o1777) // a new folder too: mkdir's mode is cut by the umask
    return
  }
  throw new StateError(
    'STATE_DIR_NOT_SHARED',
    `${dir} is private to uid ${info.uid} (mode ${(info.mode & 0o7777).toString(8)}), so other users cannot keep their keys and MPS pipes there`,
    {
      exit: 4,
      fix: [`sudo chmod 1777 ${dir}`],
    },
  )
}
