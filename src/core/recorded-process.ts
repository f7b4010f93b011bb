/**
 * The one liveness test for a process some file names (a lock's holder, a queued request, a name claim, a session's
 * `up` or `down`): its pid and hostname, and where recorded its start time, so a pid the kernel handed out again is
 * not taken for the process that wrote the record.
 */
import fs from 'node:fs'
import os from 'node:os'

/** What a file records of the process that wrote it; `startTicks` (/proc/PID/stat field 22) where it was recorded. */
export type RecordedProcess = {readonly pid: number; readonly hostname: string; readonly startTicks?: string | null}

/** This process, as a record names it. */
export function thisProcess(): {pid: number; hostname: string; startTicks: string | null} {
  return {pid: process.pid, hostname: os.hostname(), startTicks: startTicksOf(process.pid)}
}

/** When the process started, in clock ticks after boot (/proc/PID/stat field 22); null where /proc does not say. */
export function startTicksOf(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

/** Gone, or a zombie (exited, not yet reaped). A process of another user (EPERM) is alive. */
export function isProcessGone(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ESRCH'
  }
  try {
    return /^\d+ \(.*\) Z/s.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

/**
 * A recorded process that ran on this host and is gone: its pid is free (or a zombie's), or now names a process that
 * started at another time. One of another host is never judged from here.
 */
export function diedOnThisHost(recorded: RecordedProcess): boolean {
  if (recorded.hostname !== os.hostname()) return false
  if (isProcessGone(recorded.pid)) return true
  const recordedStart = recorded.startTicks ?? null
  return recordedStart !== null && startTicksOf(recorded.pid) !== recordedStart
}
