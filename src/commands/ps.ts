import type {SessionView} from '../client/read-host-status.js'
import {BaseCommand} from '../shell/base-command.js'
import {renderPs} from '../render/render-ps.js'
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
