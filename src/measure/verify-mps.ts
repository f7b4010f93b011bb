/**
 * verify's MPS check, the running part: the probe of mps-check.ts in an ssh login shell (`bash -l`) and in an ssh
 * command (non-login, non-interactive), as a user reaches the session; without sshd, the same two through docker exec.
 */
import type {VerdictCheck} from '../core/check.js'
import type {CommandOutput} from '../core/executor.js'
import {execUserOf} from '../container/session-container.js'
import {DockerRuntime} from '../container/runtime.js'
import {identityFor, loginToSession, type SessionAccess} from '../client/session-access.js'
import {singleQuote} from '../core/shell-words.js'
import {MPS_CHECK_NAMES, MPS_PROBE, mpsChecks, mpsChecksSkipped, type MpsProbe, parseMpsProbe, type ProbedShell} from './mps-check.js'

/** a probe in the member's shell (their ~/.bashrc runs) that does not end by then is a failed check */
const PROBE_TIMEOUT_MS = 60_000

/** The session's MPS checks: SKIP when planned without MPS, else one a shell. */
export async function verifyMps(access: SessionAccess): Promise<VerdictCheck[]> {
  const wanted = access.session.plan.mps
  if (wanted === null) return mpsChecksSkipped()
  const login = `bash -lc ${singleQuote(MPS_PROBE)}`
  const c = access.container
  if (c.sshPort !== null && c.sshHost !== null) {
    const ssh = await loginToSession(access, await identityFor(access)).catch((error: Error) => error)
    if (ssh instanceof Error) return mpsChecks(wanted, shells('ssh', failed(ssh.message), failed(ssh.message)))
    try {
      return mpsChecks(wanted, shells('ssh', probed(await ssh.exec(login)), probed(await ssh.exec(MPS_PROBE))))
    } finally {
      ssh.close()
    }
  }
  // no sshd: `gpu-cosplay ssh` goes through docker exec, so the probe does too
  const runtime = new DockerRuntime()
  const exec = (argv: string[]) =>
    runtime.exec(c.id, argv, {user: execUserOf(c), workingDir: '/workspace', timeoutMs: PROBE_TIMEOUT_MS}).then(probed, (e: Error) => failed(e.message))
  return mpsChecks(wanted, shells('docker exec', await exec(['sh', '-c', login]), await exec(['sh', '-c', MPS_PROBE])))
}

function shells(via: string, login: MpsProbe, command: MpsProbe): ProbedShell[] {
  return [
    {check: MPS_CHECK_NAMES.login, label: `${via} login shell`, probe: login},
    {check: MPS_CHECK_NAMES.command, label: `${via} command`, probe: command},
  ]
}

function probed(ran: CommandOutput): MpsProbe {
  const probe = parseMpsProbe(ran.stdout)
  // a login shell's profile may print lines of its own: the probe's are tab-separated and start with a key
  if (ran.exitCode === 0 && /^pipe\t/m.test(ran.stdout)) return probe
  return failed(`exit ${ran.exitCode}: ${(ran.stderr || ran.stdout).trim().split('\n').pop() ?? ''}`)
}

function failed(why: string): MpsProbe {
  return {pipeDirectory: null, control: null, threadPercentage: null, pinnedMemLimit: null, error: why}
}
