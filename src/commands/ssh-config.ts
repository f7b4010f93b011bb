import {Args} from '@oclif/core'

import {ContainerError} from '../core/errors.js'
import {BaseCommand} from './support/base-command.js'

export type SshConfigResult = {session: string; host: string; hostName: string; port: number; user: string; identityFile: string; entry: string}

export default class SshConfig extends BaseCommand {
  static summary = "Print a ~/.ssh/config Host entry for a session (VS Code Remote-SSH)"
  static description = `Prints a Host entry named gpu-cosplay-NAME with the session's port, user and key. Append it to
~/.ssh/config and pick that host in VS Code's Remote-SSH. Host keys are not pinned: every container has fresh
ones and the port is bound to this machine. NAME may be left out when you have exactly one session.`
  static examples = ['<%= config.bin %> ssh-config >> ~/.ssh/config', '<%= config.bin %> ssh-config alice-rtx_3090 --json']
  static args = {name: Args.string({description: 'session name (default: your only session)'})}

  async run(): Promise<SshConfigResult> {
    const {args} = await this.parse(SshConfig)
    const [{accessSession, identityFor}, {sshConfigEntry}] = await Promise.all([import('./support/session-access.js'), import('../container/connect-hints.js')])
    const access = accessSession(args.name)
    const c = access.container
    if (c.sshPort === null || c.sshHost === null) {
      throw new ContainerError('NO_SSHD', `session "${c.session}" runs an image without sshd`, {fix: [`use gpu-cosplay ssh ${c.session} or gpu-cosplay exec ${c.session} -- CMD`]})
    }
    const identity = await identityFor(access)
    const entry = sshConfigEntry(c, identity.privateKeyPath)
    const result = {session: c.session, host: `gpu-cosplay-${c.session}`, hostName: c.sshHost, port: c.sshPort, user: c.user, identityFile: identity.privateKeyPath, entry}
    if (!this.jsonEnabled()) this.log(entry)
    return result
  }
}
