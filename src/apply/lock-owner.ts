import fs from 'node:fs'
import os from 'node:os'
import {readTextIfExists, writeTextAtomic} from '../core/json-file.js'
import {diedOnThisHost, type RecordedProcess, startTicksOf} from '../core/recorded-process.js'
import type {StatePolicy} from '../core/state-policy.js'
import {lockOwnerPath, lockTakeoverPath} from '../core/state-layout.js'

/**
 * Who holds a GPU lock, so that a waiter can take over at once from a holder that died on this host instead of
 * waiting for its lock directory to go stale. The holder writes `<lock>.owner` right after its mkdir won:
 * {pid, hostname, start time, the lock directory's inode and birth time}. The birth time ties the record to that one
 * directory: a record left by an earlier holder never matches a directory made since, even on a reused inode.
 */
export type LockOwner = RecordedProcess & {readonly ino: string; readonly birthtimeNs: string}

/**
 * A dead holder's lock is taken over by pid only while its mtime is younger than this; older ones are left to
 * proper-lockfile's stale rule (4 s). A dead holder's mtime no longer moves, so the two rules never act on the
 * same directory within a second of each other, and neither can remove a lock the other has just made.
 */
export const PID_TAKEOVER_MAX_AGE_MS = 3_000

/** A crashed takeover's mutex older than this is removed (a takeover takes a few ms). */
const MUTEX_STALE_MS = 10_000

/** One lock directory, told apart from a later one at the same path: its inode and birth time (0: not known here). */
export type DirIdentity = {readonly ino: string; readonly birthtimeNs: string; readonly mtimeMs: number}

export function lockDirIdentity(dir: string): DirIdentity | null {
  try {
    const s = fs.lstatSync(dir, {bigint: true})
    if (!s.isDirectory()) return null
    return {ino: String(s.ino), birthtimeNs: String(s.birthtimeNs), mtimeMs: Number(s.mtimeMs)}
  } catch {
    return null
  }
}

/** Right after taking the lock: say who holds it (written whole, by rename). */
export function recordOwner(lockPath: string): void {
  const id = lockDirIdentity(lockPath)
  if (!id || id.birthtimeNs === '0') return // no birth time on this file system: the mtime rule alone applies
  const owner: LockOwner = {pid: process.pid, hostname: os.hostname(), startTicks: startTicksOf(process.pid), ino: id.ino, birthtimeNs: id.birthtimeNs}
  try {
    writeTextAtomic(lockOwnerPath(lockPath), JSON.stringify(owner), 0o644)
  } catch {
    // Without a record waiters fall back to the mtime rule: slower, never wrong.
  }
}

function readOwner(lockPath: string, trust: StatePolicy): LockOwner | null {
  try {
    const o = JSON.parse(readTextIfExists(lockOwnerPath(lockPath), {owner: trust.trustedOwner}) ?? 'null')
    if (typeof o?.pid !== 'number' || typeof o.hostname !== 'string' || typeof o.ino !== 'string' || typeof o.birthtimeNs !== 'string') return null
    if (o.startTicks !== undefined && o.startTicks !== null && typeof o.startTicks !== 'string') return null
    return o as LockOwner
  } catch {
    return null
  }
}

/** The lock directory now is the one the record names, and that holder is a dead process on this host. */
function heldByDeadLocal(lockPath: string, trust: StatePolicy, now: () => number): boolean {
  const owner = readOwner(lockPath, trust)
  if (!owner || owner.hostname !== os.hostname() || owner.pid === process.pid) return false
  const id = lockDirIdentity(lockPath)
  if (!id || id.birthtimeNs === '0' || id.ino !== owner.ino || id.birthtimeNs !== owner.birthtimeNs) return false
  if (now() - id.mtimeMs >= PID_TAKEOVER_MAX_AGE_MS) return false
  return diedOnThisHost(owner)
}

/**
 * A waiter that found the lock held: when its holder is a dead process on this host, remove its lock directory
 * so the next attempt can take it. Two waiters never both remove: the removal is done under a second mutex
 * (mkdir), after checking again there. Returns whether a dead holder's lock was removed.
 */
export function takeOverFromDeadLocal(lockPath: string, trust: StatePolicy, now: () => number = Date.now): boolean {
  if (!heldByDeadLocal(lockPath, trust, now)) return false
  const mutex = lockTakeoverPath(lockPath)
  try {
    fs.mkdirSync(mutex)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') return false
    const id = lockDirIdentity(mutex)
    // A takeover killed inside its few ms would block every later one: clear it, and let the next round retry.
    if (id && now() - id.mtimeMs > MUTEX_STALE_MS) fs.rmSync(mutex, {recursive: true, force: true})
    return false
  }
  try {
    if (!heldByDeadLocal(lockPath, trust, now)) return false
    fs.rmdirSync(lockPath)
    return true
  } catch {
    return false
  } finally {
    fs.rmSync(mutex, {recursive: true, force: true})
  }
}
