/**
 * `up --host a,b`: plan on every box (each answers with its own live GPU and leases, exactly what its `up`
 * would do), rank the boxes by the planner's own score, and bring the session up on the best; when that box
 * was taken in the meantime (another `up` got there first), the next one. Nothing changes on a box but the
 * one the session lands on.
 */
import {isCosplayError} from '../core/errors.js'
import type {HostAddress} from '../remote/host-url.js'
import {forwardedArgv} from '../remote/remote-command-line.js'
import {RemoteError} from '../remote/remote-error.js'
import {runRemote} from '../remote/run-remote.js'
import {hostsFrom} from '../remote/open-host.js'
import {onHost} from './forward-to-host.js'
import {describePlacement, type PlacementCandidate, rankCandidates, type RankedCandidate, weighedErrors} from '../plan/placement.js'
import type {Plan} from '../plan/types.js'

/** refusals that mean "this box cannot take it now": another box may */
const TRY_NEXT = new Set(['MIG_NO_FREE_SLOT', 'GPU_BUSY', 'LEASE_CONFLICT', 'MIG_PENDING_RESET'])

export type Placement = {
  /** the box the session went to */
  host: string
  /** every box asked, best first: the planner's score (0 = exact) and the weighed axes' errors, or its refusal */
  candidates: Array<{host: string; score: number | null; weighed: Plan['weighed'] | null; refused: {code: string; message: string} | null}>
}

/** up's planning flags: every box plans with them */
export type PlanFlags = {
  readonly 'host-gpu'?: number
  readonly match: string
  readonly strict: boolean
  readonly 'lock-clock': boolean
  readonly 'cap-power': boolean
  readonly 'no-mps': boolean
  readonly count?: number
  readonly datasheet?: boolean
}

/**
 * `up GPU --host a,b`: plan on each box, then `up` (the command forwarded to one box) on the one whose plan comes
 * closest. Null when `spec` names one box: that is a plain --host.
 */
export async function upOnBestHost<T>(
  spec: string,
  gpu: string,
  flags: PlanFlags,
  how: {readonly version: string; readonly up: (host: string) => Promise<T>; readonly say: (line: string) => void},
): Promise<(T & {placement: Placement}) | null> {
  const hosts = hostsFrom(spec)
  if (hosts.length < 2) return null
  how.say(`Planning ${gpu} on ${hosts.map((h) => h.label).join(', ')}`)
  const planArgs = [
    gpu,
    ...['--match', flags.match],
    ...(flags['host-gpu'] === undefined ? [] : ['--host-gpu', String(flags['host-gpu'])]),
    ...(flags.strict ? ['--strict'] : []),
    ...(flags['lock-clock'] ? ['--lock-clock'] : []),
    ...(flags['cap-power'] ? ['--cap-power'] : []),
    ...(flags['no-mps'] ? ['--no-mps'] : []),
    // the plan the box would apply: N devices, on the basis asked
    ...(flags.count !== undefined && flags.count > 1 ? ['--count', String(flags.count)] : []),
    ...(flags.datasheet ? ['--datasheet'] : []),
  ]
  const ranked = await rankHosts(hosts, planArgs, how.version)
  if (ranked[0].plan !== null) how.say(describePlacement(ranked))
  const {result, placement} = await upOnBest(ranked, how.up, how.say)
  return {...result, placement}
}

/** The boxes best first, each with its plan for `up`'s arguments (plan argv: the target and up's planning flags). */
export async function rankHosts(hosts: readonly HostAddress[], planArgs: readonly string[], version: string): Promise<RankedCandidate[]> {
  const argv = forwardedArgv('plan', planArgs)
  const candidates = await Promise.all(hosts.map((host) => planOn(host, argv, version)))
  return rankCandidates(candidates)
}

async function planOn(host: HostAddress, argv: string[], version: string): Promise<PlacementCandidate> {
  try {
    const {payload} = await onHost(host, version, (transport) => runRemote(transport, argv, version))
    return {host: host.label, plan: payload as Pick<Plan, 'weighed'>, refused: null}
  } catch (error) {
    if (!isCosplayError(error)) throw error
    return {host: host.label, plan: null, refused: {code: error.code, message: error.message}}
  }
}

/**
 * Runs `up` on the best box that takes it. A box that refuses with a "taken meanwhile" state error passes the
 * turn to the next; any other failure (bad input, Ctrl-C, ssh) ends here as it would with one --host.
 */
export async function upOnBest<T>(
  ranked: readonly RankedCandidate[],
  up: (host: string) => Promise<T>,
  say: (line: string) => void,
): Promise<{result: T; placement: Placement}> {
  const usable = ranked.filter((c) => c.plan !== null)
  if (usable.length === 0) {
    throw new RemoteError('NO_HOST_FITS', `no box can take the session: ${ranked.map((c) => `${c.host}: ${c.refused?.message ?? 'refused'}`).join('; ')}`, {
      exit: 3,
      fix: ['see what each box holds: gpu-cosplay status --host ' + ranked.map((c) => c.host).join(',')],
    })
  }
  const candidates = ranked.map((c) => ({
    host: c.host,
    score: c.score === null ? null : Math.round(c.score * 10_000) / 10_000,
    weighed: c.plan && [...c.plan.weighed],
    refused: c.refused && {code: c.refused.code, message: c.refused.message},
  }))
  for (let i = 0; ; i++) {
    const candidate = usable[i]
    try {
      return {result: await up(candidate.host), placement: {host: candidate.host, candidates}}
    } catch (error) {
      const next = usable[i + 1]
      if (!next || !isCosplayError(error) || !TRY_NEXT.has(error.code)) throw error
      say(`${candidate.host} was taken meanwhile (${error.code}); trying ${next.host} (${next.plan ? weighedErrors(next.plan) : ''})`)
    }
  }
}
