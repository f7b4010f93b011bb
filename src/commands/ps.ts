import type {SessionView} from '../client/read-host-status.js'
import {BaseCommand} from '../shell/base-command.js'
import {renderPs, renderQueue} from '../render/render-ps.js'
import type {QueuedRequest} from '../client/read-host-status.js'
import {Flags} from '@oclif/core'
import {hostsFlag} from '../shell/host-flag.js'

/** with several --host boxes, each session says which box it is on */
export type PsResult = Array<SessionView & {host?: string}>

export default class Ps extends BaseCommand {
  static summary = 'List cosplay sessions on this host'
  static description =
    'Every session of every user, from the shared state directory, with its container state. Reads only: one nvidia-smi probe (GPU indexes, missing instances) and one Docker listing.'
  static examples = ['<%= config.bin %> ps', '<%= config.bin %> ps --json', '<%= config.bin %> ps --queue']

  static flags = {
    ...hostsFlag,
    queue: Flags.boolean({description: 'list the up --wait requests waiting for a slice, in the order they will be served', exclusive: ['host']}),
  }

  async run(): Promise<PsResult | QueuedRequest[]> {
    const {flags} = await this.parse(Ps)
    if (flags.queue) {
      const queue = await (await import('../engine/perform.js')).perform({op: 'queue'}, {progress: null}, this.config.version)
      if (!this.jsonEnabled()) this.log(renderQueue(queue))
      return queue
    }
    const remote = await this.forwardToHost<PsResult>(flags.host, renderPs, (perHost) => perHost.flatMap(({host, result}) => result.map((s) => ({host, ...s}))))
    if (remote) return remote.result
    const {sessions} = await (await import('../engine/perform.js')).perform({op: 'status', orphans: false}, {progress: null}, this.config.version)
    if (!this.jsonEnabled()) this.log(renderPs(sessions))
    return sessions
  }
}
