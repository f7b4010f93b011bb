import {Args, Flags} from '@oclif/core'

import type {ExtendResult} from '../client/end-sessions.js'
import {renderExtend} from '../render/render-extend.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'

export default class Extend extends BaseCommand {
  static summary = 'Move the end of a session with a TTL later'
  static description = `A session started with up --ttl (or the box's default TTL) is ended by the reaper at its end, after its users were told (ten minutes before, or a fifth of a shorter lifetime). extend moves that end DURATION later; the time left afterwards may not exceed the box's maximum TTL (system install --max-ttl; root may). Only the session's owner (or root) may extend it. Changes nothing on the GPU.`
  static examples = ['<%= config.bin %> extend alice-rtx_3090 --by 2h', '<%= config.bin %> extend alice-rtx_3090 --by 30m --json']
  static args = {name: Args.string({description: 'session name; see gpu-cosplay ps', required: true})}
  static flags = {by: Flags.string({description: 'how much later, e.g. 30m, 2h, 1h30m', required: true}), ...hostFlag}

  async run(): Promise<ExtendResult> {
    const {args, flags} = await this.parse(Extend)
    const remote = await this.forwardToHost(flags.host, renderExtend)
    if (remote) return remote.result
    const [{parseDuration}, {perform}] = await Promise.all([import('../core/duration.js'), import('../engine/perform.js')])
    const result = await perform({op: 'extend', name: args.name, byMs: parseDuration(flags.by, '--by')}, {progress: null}, this.config.version)
    if (!this.jsonEnabled()) this.log(renderExtend(result))
    return result
  }
}
