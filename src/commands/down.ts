import {Args, Flags, ux} from '@oclif/core'

import type {DownResult} from '../client/end-sessions.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'
import {renderDown} from '../render/render-down.js'

export type {DownResult} from '../client/end-sessions.js'

export default class Down extends BaseCommand {
  static summary = 'End sessions and put the GPU back as it was found'
  static description = `Removes the session's container, destroys exactly its compute and GPU instance (by ID, never others'), and leaves its leases of the GPU-wide settings; the last session on a GPU restores the values that were in force before the first one started (and turns MIG mode off again if gpu-cosplay turned it on and no instance remains).

A GPU-wide lease hold (\`lease:HOLDER\` in \`ps\`) ends like \`lease release\`; \`--all\` ends your holds too. Only the owner (or root) can end a session. A name given twice is ended once.`
  static examples = ['<%= config.bin %> down alice-rtx_3090', '<%= config.bin %> down a b c', '<%= config.bin %> down --all']
  static strict = false
  static args = {name: Args.string({description: 'session name(s); see gpu-cosplay ps'})}
  static flags = {all: Flags.boolean({description: 'end every session you own (all sessions, as root)'}), ...hostFlag}

  async run(): Promise<DownResult> {
    const {argv, flags} = await this.parse(Down)
    const remote = await this.forwardToHost(flags.host, (r: DownResult) => renderDown(r.closed))
    if (remote) return remote.result
    const progress = this.jsonEnabled()
      ? null
      : {say: (line: string) => this.logToStderr(line), start: (a: string) => ux.action.start(a), stop: (o: string) => ux.action.stop(o)}
    const {perform} = await import('../engine/perform.js')
    const result = await perform({op: 'down', names: argv as string[], all: flags.all === true}, {progress}, this.config.version)
    if (!this.jsonEnabled()) this.log(renderDown(result.closed))
    return result
  }
}
