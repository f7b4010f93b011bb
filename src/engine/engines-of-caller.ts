/**
 * How many engines one member runs at once. Each is a root process the member's own limits (ulimit, their cgroup) do
 * not cover, so the engine counts its caller's others before it takes a request: processes running this engine's
 * script with the same SUDO_UID, read from /proc (root reads every process's environment).
 */
import fs from 'node:fs'

/** The most engines one caller may have at once (a member's `ps` and `status` run beside a long `up --wait` or exec). */
export const ENGINES_PER_CALLER = 8

/**
 * The other live engines (running `script`) whose caller is `uid`; `proc` for tests. Only root's processes count: a
 * member can run their own processes with that argv and any SUDO_UID, which must not use up another member's share.
 */
export function enginesOf(uid: number, script: string, self: number = process.pid, proc = '/proc'): number {
  let count = 0
  for (const entry of fs.readdirSync(proc)) {
    if (!/^\d+$/.test(entry) || Number(entry) === self) continue
    try {
      if (fs.statSync(`${proc}/${entry}`).uid !== 0) continue
      const argv = fs.readFileSync(`${proc}/${entry}/cmdline`, 'utf8').split('\0')
      if (!argv.includes(script)) continue
      const env = fs.readFileSync(`${proc}/${entry}/environ`, 'utf8').split('\0')
      if (env.includes(`SUDO_UID=${uid}`)) count++
    } catch {
      // gone meanwhile, or not readable: not counted
    }
  }
  return count
}
