import type {SessionSummary} from '../apply/host-status.js'
import {BaseCommand} from './support/base-command.js'
import {formatTable} from './support/format-table.js'

export type PsResult = SessionSummary[]

export default class Ps extends BaseCommand {
  static summary = 'List cosplay sessions on this host'
  static description = 'Every session of every user, from the shared state directory. Reads only; calls nvidia-smi once to find GPU indexes and missing instances.'
  static examples = ['<%= config.bin %> ps', '<%= config.bin %> ps --json']

  async run(): Promise<PsResult> {
    await this.parse(Ps)
    const {readHostStatus} = await import('./support/read-host-status.js')
    const {sessions} = await readHostStatus()
    if (!this.jsonEnabled()) this.log(renderPs(sessions))
    return sessions
  }
}

export function renderPs(sessions: readonly SessionSummary[]): string {
  if (sessions.length === 0) return 'No sessions.'
  const rows = sessions.map((s) => [
    s.name,
    s.owner,
    s.target,
    s.gpuIndex === null ? '?' : String(s.gpuIndex),
    s.mig ? `${s.mig.profile} GI ${s.mig.gpuInstanceId}` : 'whole GPU',
    s.instanceMissing ? `${s.phase} (instance gone!)` : s.phase,
    s.container?.name ?? '-',
  ])
  return formatTable(['NAME', 'OWNER', 'TARGET', 'GPU', 'SLICE', 'STATE', 'CONTAINER'], rows)
}
