import path from 'node:path'

import {StateError} from '../core/errors.js'
import {NOT_YET, pollUntil} from '../core/poll.js'
import {lockPathOf, lockTargetOf} from '../core/state-layout.js'
import type {StatePolicy} from '../core/state-policy.js'
import {lockDirIdentity, recordOwner, takeOverFromDeadLocal} from './lock-owner.js'

export type LockOptions = {
  /** how long to wait for another process's mutation of this GPU, in ms */
  waitMs?: number
  /** ends the wait (Ctrl-C): INTERRUPTED, nothing taken */
  signal?: AbortSignal
  /** whose lock-owner records are read (a dead holder's lock is taken over by its record) */
  readonly trust: StatePolicy
}

/** A holder refreshes its lock every second; one silent for this long is dead (kill -9, power loss) and is taken over. */
export const LOCK_STALE_MS = 4_000
const LOCK_UPDATE_MS = 1_000

/** The lock as its holder sees it, for the writes it makes under it. */
export type HeldLock = {
  /**
   * Throws GPU_LOCK_LOST unless the lock is still this process's: its directory is the one this process made (same
   * inode and birth time) and fresh (refreshed within LOCK_STALE_MS, the rule by which others take it over). A
   * process paused past that (Ctrl-Z, a pipe it blocked on) may have lost it to a teammate who has changed the book
   * since: every book write checks this first, so the stale copy is never written.
   */
  assertHeld(): void
}

/**
 * Serialises every mutation of one GPU across processes and users, with proper-lockfile: a lock
 * directory whose mtime the holder refreshes; a holder that died (kill -9, power loss) stops
 * refreshing and its lock turns stale, so the next process takes over and recovers the journal. A holder
 * that died on this host is taken over at once, by its pid (lock-owner.ts).
 */
export async function withGpuLock<T>(stateDir: string, gpuUuid: string, fn: (lock: HeldLock) => Promise<T>, options: LockOptions): Promise<T> {
  const taken = await takeGpuLock(stateDir, gpuUuid, options)
  try {
    const result = await fn(taken.lock)
    taken.lock.assertHeld()
    return result
  } finally {
    await taken.release()
  }
}

/** A lock taken by takeGpuLock: released once, by whoever took it (openBooks lets go of some before others). */
export type TakenLock = {readonly lock: HeldLock; release(): Promise<void>}

/** withGpuLock's taking and letting go, apart: for callers that hold several locks and let go of them at different times. */
export async function takeGpuLock(stateDir: string, gpuUuid: string, options: LockOptions): Promise<TakenLock> {
  const lockfile = (await import('proper-lockfile')).default
  const target = lockTargetOf(stateDir, gpuUuid)
  const waitMs = options.waitMs ?? 120_000
  const intervalMs = 100
  const lockPath = lockPathOf(stateDir, gpuUuid)
  let compromised: Error | null = null
  let contended: unknown = null
  const tryLock = async (): Promise<(() => Promise<void>) | typeof NOT_YET> => {
    try {
      const release = await lockfile.lock(target, {
        realpath: false,
        lockfilePath: lockPath,
        stale: LOCK_STALE_MS,
        update: LOCK_UPDATE_MS,
        retries: 0,
        onCompromised: (error) => {
          compromised = error
        },
      })
      recordOwner(lockPath)
      return release
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') {
        // Not contention (a missing or unwritable folder...): say what it is, at once.
        throw new StateError('GPU_LOCK_FAILED', `cannot take the lock of GPU ${gpuUuid} in ${path.dirname(target)}: ${(error as Error).message}`, {
          cause: error,
          fix: ['check the state directory: gpu-cosplay doctor'],
        })
      }
      contended = error
      // A holder killed on this host is taken over at once; others (other hosts, no record) by the mtime rule.
      return takeOverFromDeadLocal(lockPath, options.trust) ? tryLock() : NOT_YET
    }
  }
  const release = await pollUntil(tryLock, {
    intervalMs,
    deadline: Date.now() + waitMs,
    timedOut: () =>
      new StateError('GPU_LOCKED', `GPU ${gpuUuid} is busy: another gpu-cosplay command has held its lock for over ${waitMs / 1000} s`, {
        cause: contended,
        fix: ['wait for it to finish, then retry', 'see what runs: gpu-cosplay status'],
      }),
    signal: options.signal,
    aborted: () => new StateError('INTERRUPTED', `interrupted while waiting for the lock of GPU ${gpuUuid}; nothing was changed`),
  })
  const taken = lockDirIdentity(lockPath)
  let lost: Error | null = null
  const stillHeld = (): boolean => {
    lost ??= compromised ?? whyNotOurs(lockPath, taken)
    return lost === null
  }
  const lock: HeldLock = {
    assertHeld() {
      if (!stillHeld()) throw lockLost(gpuUuid, lost!)
    },
  }
  let released = false
  return {
    lock,
    async release() {
      if (released) return
      released = true
      // a lost lock is released by no one but its new holder: removing it would let a third process in beside them
      if (stillHeld()) await release().catch(() => undefined)
    },
  }
}

/** Why the lock directory at `lockPath` is no longer the one taken (replaced, gone, or stale), or null. */
function whyNotOurs(lockPath: string, taken: ReturnType<typeof lockDirIdentity>): Error | null {
  const now = lockDirIdentity(lockPath)
  if (now === null) return new Error(`${lockPath} is gone`)
  // Where the file system keeps no birth time (both '0'), the inode alone tells them apart; a new lock on a reused
  // inode is then caught by proper-lockfile's own check (its mtime is not ours) within a second.
  if (taken === null || now.ino !== taken.ino || now.birthtimeNs !== taken.birthtimeNs) return new Error(`${lockPath} was taken over by another process`)
  const ageMs = Date.now() - now.mtimeMs
  if (ageMs > LOCK_STALE_MS) return new Error(`${lockPath} was not refreshed for ${Math.round(ageMs / 1000)} s: others may take it over`)
  return null
}

function lockLost(gpuUuid: string, cause: Error): StateError {
  return new StateError('GPU_LOCK_LOST', `lost the lock of GPU ${gpuUuid} while changing it (was this process paused for over ${LOCK_STALE_MS / 1000} s?)`, {
    cause,
    fix: ['run gpu-cosplay recover'],
  })
}
