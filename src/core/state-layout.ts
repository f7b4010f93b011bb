/**
 * The state directory's layout, named once. Every path inside it is made here; the modules that read and write them
 * (book-store, gpu-lock, session-names, wait-queue, state-dir, mps-step, ssh-keys, stage-mounts-step,
 * calibration-file, image-pin, session-env-file, box-install) ask for the path and never spell it.
 *
 * ```
 * <state>/gpus/<uuid>.json            a GPU's book (gpu-book.ts)
 * <state>/gpus/<uuid>.lock/           its lock (proper-lockfile), with .owner and .takeover beside it (lock-owner.ts)
 * <state>/gpus/box-queue.lock/        the queue's lock; gpus/box-quota.lock/: the quota check's
 * <state>/sessions/<name>.json        a name claim (session-names.ts)
 * <state>/queue/<id>.json             a waiting request (wait-queue.ts)
 * <state>/users/<uid>/                a user's folder: ssh/id_ed25519, <session>.env, mps/<hash>/{pipe,log}
 * <state>/mounts/<session>/          a session's staged binds, root's alone (stage-mounts-step.ts)
 * <state>/calibrations/<model>-<driver>.json   what calibrate measured (apply/calibration-file.ts)
 * <state>/images.json                 the pinned image IDs (image-pin.ts)
 * ```
 */
import path from 'node:path'

/** the folders every writable state directory has (the team's set-up makes them 0777) */
export const WRITABLE_STATE_FOLDERS = ['gpus', 'sessions'] as const
/** the folders the engine keeps root's (0755) */
export const ENGINE_STATE_FOLDERS = ['gpus', 'sessions', 'users'] as const
/** the folders `system install` makes */
export const INSTALLED_STATE_FOLDERS = ['gpus', 'sessions', 'users', 'calibrations'] as const

export function booksDir(stateDir: string): string {
  return path.join(stateDir, 'gpus')
}

/** `gpus/<uuid>.json` */
export function bookPath(stateDir: string, gpuUuid: string): string {
  return path.join(booksDir(stateDir), `${gpuUuid}.json`)
}

/** The file proper-lockfile locks for `name` (a GPU's UUID, or a box-wide lock's name); its lock is lockPathOf. */
export function lockTargetOf(stateDir: string, name: string): string {
  return path.join(booksDir(stateDir), name)
}

/** `gpus/<name>.lock`: the lock folder */
export function lockPathOf(stateDir: string, name: string): string {
  return `${lockTargetOf(stateDir, name)}.lock`
}

/** the queue's lock name (`gpus/box-queue.lock`): held while a member's request is counted and written */
export const QUEUE_LOCK = 'box-queue'
/** the quota check's lock name (`gpus/box-quota.lock`) */
export const QUOTA_LOCK = 'box-quota'

/** who holds a lock: `<lock>.owner` */
export function lockOwnerPath(lockPath: string): string {
  return `${lockPath}.owner`
}

/** the mutex of a takeover from a dead holder: `<lock>.takeover` */
export function lockTakeoverPath(lockPath: string): string {
  return `${lockPath}.takeover`
}

export function claimsDir(stateDir: string): string {
  return path.join(stateDir, 'sessions')
}

/** `sessions/<name>.json` */
export function claimPath(stateDir: string, name: string): string {
  return path.join(claimsDir(stateDir), `${name}.json`)
}

export function queueDir(stateDir: string): string {
  return path.join(stateDir, 'queue')
}

/** `queue/<id>.json` */
export function queueEntryPath(stateDir: string, id: string): string {
  return path.join(queueDir(stateDir), `${id}.json`)
}

export function usersDir(stateDir: string): string {
  return path.join(stateDir, 'users')
}

/** `users/<uid>` */
export function userDirOf(stateDir: string, uid: number): string {
  return path.join(usersDir(stateDir), String(uid))
}

/** Whether `dir` is `<stateDir>/users/<uid>`. */
export function isUserDirOf(stateDir: string, dir: string): boolean {
  const full = path.resolve(dir)
  return /^\d+$/.test(path.basename(full)) && path.dirname(full) === usersDir(path.resolve(stateDir))
}

/** `users/<uid>/ssh`: the key the tool made for a user without one of their own */
export function userSshDir(userDir: string): string {
  return path.join(userDir, 'ssh')
}

export function userSshKeyPath(userDir: string): string {
  return path.join(userSshDir(userDir), 'id_ed25519')
}

/** `users/<uid>/<session>.env`: a session's `--env` values (session names are path-safe) */
export function sessionEnvFileOf(stateDir: string, ownerUid: number, session: string): string {
  return path.join(userDirOf(stateDir, ownerUid), `${session}.env`)
}

/** `users/<uid>/mps`: the folder of a user's sessions' MPS folders */
export function mpsHolderDir(userDir: string): string {
  return path.join(userDir, 'mps')
}

/** `users/<uid>/mps/<id>/pipe` and `.../log`: one daemon's folders */
export function mpsDirsOf(holderDir: string, id: string): {dir: string; pipeDirectory: string; logDirectory: string} {
  const dir = path.join(holderDir, id)
  return {dir, pipeDirectory: path.join(dir, 'pipe'), logDirectory: path.join(dir, 'log')}
}

/** `mounts/<session>`: where a session's staging binds go (a folder of root's alone) */
export function stagingDirOf(stateDir: string, session: string): string {
  return path.join(stateDir, 'mounts', session)
}

export function calibrationDir(stateDir: string): string {
  return path.join(stateDir, 'calibrations')
}

/** `calibrations/<model>-<driver>.json`, each part made file-name safe */
export function calibrationFile(stateDir: string, model: string, driver: string): string {
  return path.join(calibrationDir(stateDir), `${calibrationPrefix(model)}${safe(driver)}.json`)
}

/** what every calibration file of `model` starts with */
export function calibrationPrefix(model: string): string {
  return `${safe(model)}-`
}

function safe(part: string): string {
  return part.replace(/[^A-Za-z0-9._]/g, '_')
}

/** `images.json` */
export function pinnedImagesPath(stateDir: string): string {
  return path.join(stateDir, 'images.json')
}
