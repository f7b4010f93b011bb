import type {SessionView} from '../client/read-host-status.js'
import {BaseCommand} from '../shell/base-command.js'
import {formatTable} from '../render/format-table.js'
import {hostsFlag} from '../shell/host-flag.js'

/** with several --host boxes, each session says which box it is on */
export type PsResult = Array<SessionView & {host?: string}>

export default class Ps extends BaseCommand {
  static summary = 'List cosplay sessions on this host'
  static description =
    'Every session of every user, from the shared state directory, with its container state. Reads only: one nvidia-smi probe (GPU indexes, missing instances) and one Docker listing.'
  static examples = ['<%= config.bin %> ps', '<%= config.bin %> ps --json']

  static flags = {...hostsFlag}

  async run(): Promise<PsResult> {
    const {flags} = await this.parse(Ps)
    const remote = await this.forwardToHost<PsResult>(flags.host, renderPs, (perHost) => perHost.flatMap(({host, result}) => result.map((s) => ({host, ...s}))))
    if (remote) return remote.result
    const {readHostStatus} = await import('../client/read-host-status.js')
    const {sessions} = await readHostStatus({orphans: false})
    if (!this.jsonEnabled()) this.log(renderPs(sessions))
    return sessions
  }
}

export function renderPs(sessions: readonly (SessionView & {host?: string})[]): string {
  if (sessions.length === 0) return 'No sessions.'
  const crashed = sessions.filter((s) => s.crashed).map((s) => s.name)
  const rows = sessions.map((s) => [
    s.name,
    s.owner,
    s.lease ? `lease: ${describeHold(s.lease)}` : (s.target ?? '-'),
    s.gpuIndex === null ? '?' : String(s.gpuIndex),
    s.mig ? `${s.mig.profile} GI ${s.mig.gpuInstanceId}` : s.lease ? '-' : 'whole GPU',
    stateOf(s),
    s.container ? `${s.container.name} (${s.containerState ?? 'unknown'})` : '-',
  ])
  const headers = ['NAME', 'OWNER', 'TARGET', 'GPU', 'SLICE', 'STATE', 'CONTAINER']
  const onHosts = sessions.some((s) => s.host !== undefined)
  const table = onHosts
    ? formatTable(
        ['HOST', ...headers],
        rows.map((row, i) => [sessions[i].host ?? '-', ...row]),
      )
    : formatTable(headers, rows)
  if (crashed.length === 0) return table
  return `${table}\n\n${crashed.join(', ')} crashed: run gpu-cosplay recover to clean up`
}

/** What a lease hold holds, e.g. "clock 1395 MHz, power 300 W". */
export function describeHold(hold: {clockMHz: number | null; powerLimitW: number | null}): string {
  const parts = [...(hold.clockMHz === null ? [] : [`clock ${hold.clockMHz} MHz`]), ...(hold.powerLimitW === null ? [] : [`power ${hold.powerLimitW} W`])]
  return parts.join(', ')
}

function stateOf(s: SessionView): string {
  if (s.instanceMissing) return `${s.phase} (instance gone: crashed)`
  if (s.crashed && s.containerState === 'missing') return `${s.phase} (container gone: crashed)`
  if (s.crashed) return `${s.phase} (process gone: crashed)`
  return s.phase
}
