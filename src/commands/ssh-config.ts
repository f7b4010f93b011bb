import {homedir} from 'node:os'
import {join} from 'node:path'

import {Args, Flags} from '@oclif/core'

import {ContainerError} from '../core/errors.js'
import {BaseCommand} from './support/base-command.js'

export type SshConfigResult = {
  session: string
  host: string
  hostName: string
  port: number
  user: string
  identityFile: string
  entry: string
  /** with --install: where the entry was written; null without */
  installed: {entryFile: string; configFile: string; includeAdded: boolean} | null
}

export default class SshConfig extends BaseCommand {
  static summary = 'Print a ~/.ssh/config Host entry for a session (VS Code Remote-SSH)'
  static description = `Prints a Host entry named gpu-cosplay-NAME with the session's port, user and key, for VS Code's Remote-SSH or plain ssh. Host keys are not pinned: every container has fresh ones and the port is bound to this machine. NAME may be left out when you have exactly one session.

With --install the entry goes to ~/.ssh/gpu-cosplay/NAME.conf, and ~/.ssh/config gets one line at its top that includes that folder. Installing again replaces the session's entry (a session brought up again gets a new port), where appending to ~/.ssh/config would leave a stale entry that ssh reads first.`
  static examples = [
    '<%= config.bin %> ssh-config --install',
    '<%= config.bin %> ssh-config alice-rtx_3090',
    '<%= config.bin %> ssh-config alice-rtx_3090 --json',
  ]
  static args = {name: Args.string({description: 'session name (default: your only session)'})}
  static flags = {
    install: Flags.boolean({description: 'write the entry to ~/.ssh/gpu-cosplay/NAME.conf and include that folder from ~/.ssh/config'}),
  }

  async run(): Promise<SshConfigResult> {
    const {args, flags} = await this.parse(SshConfig)
    const [{accessSession, identityFor}, {sshConfigEntry}] = await Promise.all([import('./support/session-access.js'), import('../container/connect-hints.js')])
    const access = accessSession(args.name)
    const c = access.container
    if (c.sshPort === null || c.sshHost === null) {
      throw new ContainerError('NO_SSHD', `session "${c.session}" runs an image without sshd`, {
        fix: [`use gpu-cosplay ssh ${c.session} or gpu-cosplay exec ${c.session} -- CMD`],
      })
    }
    const identity = await identityFor(access)
    const entry = sshConfigEntry(c, identity.privateKeyPath)
    let installed: SshConfigResult['installed'] = null
    if (flags.install) {
      const {installSshConfig} = await import('./support/install-ssh-config.js')
      installed = installSshConfig(join(homedir(), '.ssh'), c.session, entry)
    }
    const host = `gpu-cosplay-${c.session}`
    const result = {session: c.session, host, hostName: c.sshHost, port: c.sshPort, user: c.user, identityFile: identity.privateKeyPath, entry, installed}
    if (!this.jsonEnabled())
      this.log(installed ? `Wrote ${installed.entryFile}${installed.includeAdded ? ` and included it from ${installed.configFile}` : ''}: ssh ${host}` : entry)
    return result
  }
}
