import fs from 'node:fs'
import path from 'node:path'

import {StateError} from '../core/errors.js'
import {HOST_ENV} from '../core/names.js'

/** Shared by every user on the box, so that sessions of different users see each other's leases. */
export const SHARED_STATE_DIR = '/var/lib/gpu-cosplay'

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
    fs.accessSync(path.join(dir, 'gpus'), fs.constants.W_OK)
    fs.accessSync(path.join(dir, 'sessions'), fs.constants.W_OK)
  } catch (error) {
    throw new StateError('STATE_DIR_NOT_WRITABLE', `state directory ${dir} is not writable (${(error as NodeJS.ErrnoException).code ?? 'error'})`, {
      cause: error,
      exit: 4,
      fix: [`make it writable for your team (e.g. sudo mkdir -p ${dir} && sudo chmod 1777 ${dir})`, `or set ${HOST_ENV.stateDir} to a folder you can write`],
    })
  }
}
