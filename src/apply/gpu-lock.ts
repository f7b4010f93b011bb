import path from 'node:path'

import {StateError} from '../core/errors.js'

export type LockOptions = {
  /** how long to wait for another process's mutation of this GPU, in ms */
  waitMs?: number
}

/**
 * Serialises every mutation of one GPU across processes and users, with proper-lockfile: a lock
 * directory whose mtime the holder refreshes; a holder that died (kill -9, power loss) stops
 * refreshing and its lock turns stale, so the next process takes over and recovers the journal.
 */
export async function withGpuLock<T>(stateDir: string, gpuUuid: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const lockfile = (await import('proper-lockfile')).default
  const target = path.join(stateDir, 'gpus', gpuUuid)
  const waitMs = options.waitMs ?? 120_000
  const intervalMs = 100
  let compromised: Error | null = null
  let release: () => Promise<void>
  try {
    release = await lockfile.lock(target, {
      realpath: false,
      lockfilePath: `${target}.lock`,
      // A holder refreshes every second; one silent for 4 s is dead (kill -9, power loss) and is taken over.
      stale: 4_000,
      update: 1_000,
      retries: {retries: Math.ceil(waitMs / intervalMs), factor: 1, minTimeout: intervalMs, maxTimeout: intervalMs},
      onCompromised: (error) => {
        compromised = error
      },
    })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') {
      // Not contention (a missing or unwritable folder...): say what it is, at once.
      throw new StateError('GPU_LOCK_FAILED', `cannot take the lock of GPU ${gpuUuid} in ${path.dirname(target)}: ${(error as Error).message}`, {
        cause: error,
        fix: ['check the state directory: gpu-cosplay doctor'],
      })
    }
    throw new StateError('GPU_LOCKED', `GPU ${gpuUuid} is busy: another gpu-cosplay command has held its lock for over ${waitMs / 1000} s`, {
      cause: error,
      fix: ['wait for it to finish, then retry', 'see what runs: gpu-cosplay status'],
    })
  }
  try {
    const result = await fn()
    if (compromised) throw lockLost(gpuUuid, compromised)
    return result
  } finally {
    if (!compromised) await release().catch(() => undefined)
  }
}

function lockLost(gpuUuid: string, cause: Error): StateError {
  return new StateError('GPU_LOCK_LOST', `lost the lock of GPU ${gpuUuid} while changing it (was this process paused for over 4 s?)`, {
    cause,
    fix: ['run gpu-cosplay recover'],
  })
}
