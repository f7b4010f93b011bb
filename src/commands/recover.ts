import type {RecoverResult} from '../client/recover-state.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'
import {renderRecover} from '../render/render-recover.js'

export type RecoverCommandResult = RecoverResult

export default class Recover extends BaseCommand {
  static summary = 'Finish or roll back the work of gpu-cosplay processes that died mid-way'
  static description = `Reads every GPU's journal in the state directory. A session whose \`up\` was killed is rolled back (its GPU returns to the state before that \`up\`); one whose \`down\` was killed is finished. After a reboot the lost sessions' records are dropped (the reboot removed their instances). Active sessions are not touched.

Every mutating command does this for its own GPU first; run it yourself after a crash or Ctrl-C Ctrl-C.`
  static examples = ['<%= config.bin %> recover', '<%= config.bin %> recover --json']

  static flags = {...hostFlag}

  async run(): Promise<RecoverCommandResult> {
    const {flags} = await this.parse(Recover)
    const remote = await this.forwardToHost(flags.host, renderRecover)
    if (remote) return remote.result
    const progress = this.jsonEnabled() ? null : {say: (line: string) => this.logToStderr(line), start: () => undefined, stop: () => undefined}
    const result = await (await import('../engine/perform.js')).perform({op: 'recover'}, {progress}, this.config.version)
    if (!this.jsonEnabled()) this.log(renderRecover(result))
    return result
  }
}
