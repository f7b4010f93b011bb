/**
 * `verify`: runs runtime-hooks/verify.py in the session's container (docker exec, as the session user) and reads
 * its report, then adds the MPS checks (verify-mps.ts: from an ssh login shell and an ssh command, would a CUDA client
 * reach the session's daemon with the plan's limits?); with --perf, its measurement, held to the session's plan by
 * verify-perf.ts.
 */
import {accessSession} from '../client/session-access.js'
import type {Spinner} from '../client/progress.js'
import {DockerRuntime} from '../container/runtime.js'
import {execUserOf} from '../container/session-container.js'
import {tally, type VerdictCheck, type Verdict, VERDICTS} from '../core/check.js'
import type {CallContext} from '../core/call-context.js'
import {ContainerError} from '../core/errors.js'
import {verifyMps} from './verify-mps.js'
import type {VerifyDistributedResult} from './verify-distributed.js'
import type {VerifyPerfResult} from './verify-perf.js'

export type VerifyResult = {session: string; checks: VerdictCheck[]; summary: Record<Verdict, number>}

const HOOKS = '/opt/gpu-cosplay/hooks'
// what runs in the member's container may hang (their ~/.bashrc, their python): the engine waits so long, then ends it
const CHECK_TIMEOUT_MS = 120_000
const PERF_TIMEOUT_MS = 300_000
// the script gives its ranks 300 s
const DISTRIBUTED_TIMEOUT_MS = 330_000

/** The session's self-test, or with `perf` its measurement; `spinner` shows while it measures. */
export async function verifySession(
  call: CallContext,
  name: string | undefined,
  options: {readonly perf: boolean; readonly cpu: boolean; readonly distributed?: boolean},
  spinner: Spinner | null,
): Promise<VerifyResult | VerifyPerfResult | VerifyDistributedResult> {
  const access = accessSession(call, name)
  const c = access.container
  if (options.distributed) {
    const {requireRanks, verifyDistributed} = await import('./verify-distributed.js')
    spinner?.start(`Running ${requireRanks(access)} ranks in ${c.session} (an all-reduce and a DDP step)`)
    let ran
    try {
      ran = await new DockerRuntime().exec(c.id, ['python3', `${HOOKS}/verify_distributed.py`, '--json'], {
        user: execUserOf(c),
        workingDir: '/workspace',
        timeoutMs: DISTRIBUTED_TIMEOUT_MS,
      })
    } catch (error) {
      spinner?.stop('failed')
      throw error
    }
    spinner?.stop('done')
    return verifyDistributed(access, ran)
  }
  // a session has a GPU: --perf asks for CUDA there, so a CUDA that does not work fails instead of measuring the CPU
  const argv = ['python3', `${HOOKS}/verify.py`, ...(options.perf ? ['--perf', '--device', options.cpu ? 'cpu' : 'cuda'] : [])]
  const progress = options.perf ? spinner : null
  progress?.start(`Measuring in ${c.session} (up to 30 s on a GPU)`)
  let ran
  try {
    ran = await new DockerRuntime().exec(c.id, argv, {
      user: execUserOf(c),
      workingDir: '/workspace',
      timeoutMs: options.perf ? PERF_TIMEOUT_MS : CHECK_TIMEOUT_MS,
    })
  } catch (error) {
    progress?.stop('failed')
    throw error
  }
  progress?.stop('done')
  if (options.perf) return (await import('./verify-perf.js')).verifyPerf(access, ran)
  let parsed: {checks: VerdictCheck[]; summary: VerifyResult['summary']}
  try {
    parsed = JSON.parse(ran.stdout)
  } catch (error) {
    throw new ContainerError(
      'VERIFY_FAILED',
      `verify.py in ${c.name} printed no report (exit ${ran.exitCode}): ${(ran.stderr || ran.stdout).trim().split('\n').pop() ?? ''}`,
      {
        cause: error,
        fix: ['is python3 in the image?', `look inside: gpu-cosplay ssh ${c.session}`],
      },
    )
  }
  const checks = [...parsed.checks, ...(await verifyMps(access))]
  const statuses = checks.map((check) => check.status)
  return {session: c.session, checks, summary: tally(VERDICTS, statuses)}
}
