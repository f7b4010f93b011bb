import type {Executor} from '../core/executor.js'

export type SmiPrivilegeMode = 'root' | 'sudo' | 'none'

export type SmiPrivileges = {
  /** root: mutations run as is; sudo: they can run as `sudo -n nvidia-smi ...`; none: they will be refused */
  readonly mode: SmiPrivilegeMode
  readonly detail: string
}

const SUDO_CHECK_TIMEOUT_MS = 5000

/**
 * Can this user change GPU settings through nvidia-smi? Root can; otherwise `sudo -n -l <smiPath>` asks sudo,
 * without a password prompt, whether that exact command is allowed (exit 0 and the path on stdout).
 * Reads only: nothing runs as root.
 */
export async function checkSmiPrivileges(executor: Executor, smiPath: string, uid: number | null): Promise<SmiPrivileges> {
  if (uid === 0) return {mode: 'root', detail: 'running as root'}
  const who = uid === null ? 'this user' : `uid ${uid}`
  let result
  try {
    result = await executor.run(['sudo', '-n', '-l', smiPath], {timeoutMs: SUDO_CHECK_TIMEOUT_MS})
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT'
    return {mode: 'none', detail: missing ? `${who} is not root and sudo is not installed` : `${who} is not root and sudo could not be run`}
  }
  if (result.timedOut) return {mode: 'none', detail: `${who} is not root and sudo -n -l did not answer within ${SUDO_CHECK_TIMEOUT_MS} ms`}
  if (result.exitCode === 0 && result.stdout.trim() !== '') {
    return {mode: 'sudo', detail: `${who} may run ${smiPath} with passwordless sudo`}
  }
  const said = firstLine(result.stderr)
  const why = /password is required/i.test(said) ? 'sudo wants a password' : said === '' ? `sudo does not allow ${smiPath}` : said
  return {mode: 'none', detail: `${who} is not root and cannot run nvidia-smi through sudo -n (${why})`}
}

function firstLine(text: string): string {
  return (
    text
      .split(/\r?\n/)
      .map((line) => line.trim())
      .find((line) => line !== '')
      ?.replace(/^sudo:\s*/, '') ?? ''
  )
}
