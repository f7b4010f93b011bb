import type {SessionView} from './support/read-host-status.js'
import {BaseCommand} from './support/base-command.js'
import {formatTable} from './support/format-table.js'

export type PsResult = SessionView[]

export default class Ps extends BaseCommand {
  static summary = 'List cosplay sessions on this host'
  static description = 'Every session of every user, from the shared state directory, with its container state. Reads only: one nvidia-smi probe (GPU indexes, missing instances) and one Docker listing.'
  static examples = ['<%= config.bin %> ps', '<%= config.bin %> ps --json']

  async run(): Promise<PsResult> {
    await this.parse(Ps)
    const {readHostStatus} = await import('./support/read-host-status.js')
    const {sessions} = await readHostStatus()
    if (!this.jsonEnabled()) this.log(renderPs(sessions))
    return sessions
  }
}

export function renderPs(sessions: readonly SessionView[]): string {
  if (sessions.length === 0) return 'No sessions.'
  const rows = sessions.map((s) => [
    s.name,
    s.owner,
    s.target,
    s.gpuIndex === null ? '?' : String(s.gpuIndex),
    s.mig ? `${s.mig.profile} GI ${s.mig.gpuInstanceId}` : 'whole GPU',
    s.instanceMissing ? `${s.phase} (instance gone!)` : s.phase,
    s.container ? `${s.container.name} (${s.containerState ?? 'unknown'})` : '-',
  ])
  return formatTable(['NAME', 'OWNER', 'TARGET', 'GPU', 'SLICE', 'STATE', 'CONTAINER'], rows)
}
