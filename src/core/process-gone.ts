import fs from 'node:fs'

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
