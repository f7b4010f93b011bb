import fs from 'node:fs'
import os from 'node:os'

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

/** A recorded process that ran on this host and is gone; one of another host is never judged from here. */
export function diedOnThisHost(recorded: {readonly pid: number; readonly hostname: string}): boolean {
  return recorded.hostname === os.hostname() && isProcessGone(recorded.pid)
}
