import fs from 'node:fs'
import path from 'node:path'

import {StateError} from '../core/errors.js'
import {isUnsafeFileError} from '../core/json-file.js'
import {HOST_ENV, SHARED_STATE_DIR} from '../core/names.js'
import {ensureDirMode, settleDir} from '../core/settle-dir.js'
import type {StatePolicy} from '../core/state-policy.js'
import {ENGINE_STATE_FOLDERS, isUserDirOf, userDirOf, usersDir, WRITABLE_STATE_FOLDERS} from '../core/state-layout.js'

export {SHARED_STATE_DIR}

export type StateDir = {
  readonly dir: string
  /** false when we fell back to a per-user folder: other users' sessions are invisible from here */
  readonly isShared: boolean
  readonly warning: string | null
}

/** GPU_COSPLAY_STATE_DIR, else the shared folder, else a per-user folder with a warning. Creates what is missing. */
export function resolveStateDir(env: Readonly<Record<string, string | undefined>>, homeDir: string, trust: StatePolicy): StateDir {
  const explicit = env[HOST_ENV.stateDir]
  if (explicit && trust.engine) {
    ensureEngineStateDir(explicit)
    return {dir: explicit, isShared: true, warning: null}
  }
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

/** For a reader (`ps`, `status`, `metrics`): the state directory in use, or where it would be; creates nothing. */
export function stateDirToRead(env: Readonly<Record<string, string | undefined>>, homeDir: string): StateDir {
  return findStateDir(env, homeDir) ?? {dir: env[HOST_ENV.stateDir] || SHARED_STATE_DIR, isShared: true, warning: null}
}

/**
 * Whether resolveStateDir would take the shared folder: its gpus/ and sessions/ are writable folders (an admin may
 * have made the top folder 0755 and those 0777), or it is writable itself, so they can be made.
 */
function sharedIsUsable(): boolean {
  return WRITABLE_STATE_FOLDERS.every((sub) => isWritableDir(path.join(SHARED_STATE_DIR, sub))) || isWritableDir(SHARED_STATE_DIR)
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
      fs.mkdirSync(path.dirname(dir), {recursive: true})
      // Teammates must be able to update the same GPU's book; the tool, not file modes, enforces ownership.
      if (shared) settleDir(dir, {create: true}, ({chmod}) => chmod(0o1777))
      else fs.mkdirSync(dir, {recursive: true})
    }
    for (const sub of WRITABLE_STATE_FOLDERS) {
      const subDir = path.join(dir, sub)
      // a symlink planted in a sub-folder's place is never followed (a root run would write where it points)
      settleDir(subDir, {create: true}, ({created, chmod}) => {
        if (created) chmod(0o777)
      })
      fs.accessSync(subDir, fs.constants.W_OK)
    }
  } catch (error) {
    throw stateDirError(dir, error)
  }
}

/**
 * The engine's state directory (GPU_COSPLAY_STATE_DIR, pinned from the box's configuration): root's alone, 0755, with
 * gpus/, sessions/ and users/ the same. One left by an un-installed team set-up (a user's, or 1777) is taken over,
 * once it is known to be a real folder and not a symlink; files in it keep their owners and are trusted only when
 * root's (statePolicy).
 */
function ensureEngineStateDir(dir: string): void {
  try {
    fs.mkdirSync(path.dirname(dir), {recursive: true})
    for (const folder of [dir, ...ENGINE_STATE_FOLDERS.map((sub) => path.join(dir, sub))]) ensureDirMode(folder, 0o755, ROOT)
  } catch (error) {
    throw stateDirError(dir, error)
  }
}

const ROOT = {uid: 0, gid: 0}

function stateDirError(dir: string, error: unknown): StateError {
  if (isUnsafeFileError(error)) {
    return new StateError('STATE_DIR_DAMAGED', `state directory ${dir} is damaged: ${error.message}`, {
      cause: error,
      fix: [`move it away (its gpus/ and sessions/ must be folders), e.g. mv ${error.file} ${error.file}.bad`],
    })
  }
  return new StateError('STATE_DIR_NOT_WRITABLE', `state directory ${dir} is not writable (${(error as NodeJS.ErrnoException).code ?? 'error'})`, {
    cause: error,
    exit: 4,
    fix: [`make it writable for your team (e.g. sudo mkdir -p ${dir} && sudo chmod 1777 ${dir})`, `or set ${HOST_ENV.stateDir} to a folder you can write`],
  })
}

/**
 * `<state>/users/<uid>`: a user's own folder in the team's shared state directory, for their ssh key and their
 * sessions' MPS pipes. `<state>/users/` itself is shared like the state directory: 1777, so everyone can make their
 * folder there and nobody can remove another's; the user's folder is theirs (0700), made as its owner when we run as
 * root (sudo). In the engine both are root's: users/ 0755 and users/<uid> 0711 (the engine's own files for that user
 * sit there, 0600; what the user's processes need is a folder inside, given to them by ensurePrivateDir).
 */
export function ensureUserDir(stateDir: string, owner: {readonly uid: number; readonly gid: number}, trust: StatePolicy): string {
  const mine = userDirOf(stateDir, owner.uid)
  ensureSharedDir(usersDir(stateDir), trust)
  ensurePrivateDir(mine, owner, trust)
  return mine
}

/**
 * A folder of the user's own (0700), e.g. one session's MPS pipe directory: made or opened without following a
 * symlink in its place (refused: STATE_DIR_DAMAGED), then given to them on the descriptor. In the engine a user's
 * top folder (users/<uid>) stays root's 0711 instead: see ensureUserDir.
 */
export function ensurePrivateDir(dir: string, owner: {readonly uid: number; readonly gid: number}, trust: StatePolicy): void {
  if (trust.engine && isEngineUserDir(dir)) {
    guarded(dir, () => ensureDirMode(dir, 0o711, ROOT))
    return
  }
  guarded(dir, () =>
    settleDir(dir, {create: true}, ({info, chmod, chown}) => {
      if (info.uid !== owner.uid) {
        if (process.getuid?.() !== 0) {
          throw new StateError('STATE_DIR_NOT_OWNED', `${dir} belongs to uid ${info.uid}, not to you (uid ${owner.uid})`, {
            exit: 4,
            fix: [`sudo chown ${owner.uid}:${owner.gid} ${dir}`],
          })
        }
        chown(owner.uid, owner.gid)
      }
      if ((info.mode & 0o7777) !== 0o700) chmod(0o700)
    }),
  )
}

/**
 * A folder that holds a user's private folders (their sessions' MPS folders): in the engine root's 0711, so that the
 * user cannot swap a folder root is about to work in for a symlink; elsewhere the user's own (ensurePrivateDir).
 */
export function ensureHolderDir(dir: string, owner: {readonly uid: number; readonly gid: number}, trust: StatePolicy): void {
  if (trust.engine) guarded(dir, () => ensureDirMode(dir, 0o711, ROOT))
  else ensurePrivateDir(dir, owner, trust)
}

/** `<engine state dir>/users/<uid>` */
function isEngineUserDir(dir: string): boolean {
  const stateDir = process.env[HOST_ENV.stateDir]
  return stateDir !== undefined && isUserDirOf(stateDir, dir)
}

/** A symlink or a non-folder where a folder of ours should be: refused with the state directory's error. */
function guarded<T>(dir: string, fn: () => T): T {
  try {
    return fn()
  } catch (error) {
    if (!isUnsafeFileError(error)) throw error
    throw new StateError('STATE_DIR_DAMAGED', error.message, {cause: error, fix: [`move it away: mv ${dir} ${dir}.bad`]})
  }
}

/**
 * A folder every user of the box creates their own folder in (1777, like /tmp). Missing: created unless
 * `create` is false. A private one left by an older version is opened up when it is ours (or we are root). In the
 * engine nobody but root writes there: root's 0755.
 */
export function ensureSharedDir(dir: string, trust: StatePolicy, options: {create: boolean} = {create: true}): void {
  if (!fs.existsSync(dir) && !options.create) return
  fs.mkdirSync(path.dirname(dir), {recursive: true})
  if (trust.engine) {
    guarded(dir, () => ensureDirMode(dir, 0o755, ROOT))
    return
  }
  guarded(dir, () =>
    settleDir(dir, {create: true}, ({info, chmod}) => {
      if ((info.mode & 0o7777) === 0o1777) return
      const uid = process.getuid?.() ?? -1
      if (info.uid === uid || uid === 0) {
        chmod(0o1777) // a new folder too: mkdir's mode is cut by the umask
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
    }),
  )
}
