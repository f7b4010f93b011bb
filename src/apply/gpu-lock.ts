import path from 'node:path'

import {StateError} from '../core/errors.js'
import {recordOwner, takeOverFromDeadLocal} from './lock-owner.js'

export type LockOptions = {
  /** how long to wait for another process's mutation of this GPU, in ms */
  waitMs?: number
}

/**
 * Serialises every mutation of one GPU across processes and users, with proper-lockfile: a lock
 * directory whose mtime the holder refreshes; a holder that died (kill -9, power loss) stops
 * refreshing and its lock turns stale, so the next process takes over and recovers the journal. A holder
 * that died on this host is taken over at once, by its pid (lock-owner.ts).
 */
export async function withGpuLock<T>(stateDir: string, gpuUuid: string, fn: () => Promise<T>, options: LockOptions = {}): Promise<T> {
  const lockfile = (await import('proper-lockfile')).default
  const target = path.join(stateDir, 'gpus', gpuUuid)
  const waitMs = options.waitMs ?? 120_000
  const intervalMs = 100
  const lockPath = `${target}.lock`
  const deadline = Date.now() + waitMs
  let compromised: Error | null = null
  let release: () => Promise<void>
  for (;;) {
    try {
      release = await lockfile.lock(target, {
        realpath: false,
        lockfilePath: lockPath,
        // A holder refreshes every second; one silent for 4 s is dead (kill -9, power loss) and is taken over.
        stale: 4_000,
        update: 1_000,
        retries: 0,
        onCompromised: (error) => {
          compromised = error
        },
      })
      recordOwner(lockPath)
      break
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') {
        // Not contention (a missing or unwritable folder...): say what it is, at once.
        throw new StateError('GPU_LOCK_FAILED', `cannot take the lock of GPU ${gpuUuid} in ${path.dirname(target)}: ${(error as Error).message}`, {
          cause: error,
          fix: ['check the state directory: gpu-cosplay doctor'],
        })
      }
      // A holder killed on this host is taken over at once; others (other hosts, no record) by the mtime rule.
      if (takeOverFromDeadLocal(lockPath)) continue
      if (Date.now() >= deadline) {
        throw new StateError('GPU_LOCKED', `GPU ${gpuUuid} is busy: another gpu-cosplay command has held its lock for over ${waitMs / 1000} s`, {
          cause: error,
          fix: ['wait for it to finish, then retry', 'see what runs: gpu-cosplay status'],
        })
      }
      await new Promise((resolve) => setTimeout(resolve, intervalMs))
    }
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
