import {Args, Flags} from '@oclif/core'

import type {SshConfigResult} from '../client/session-ssh-config.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'

export default class SshConfig extends BaseCommand {
  static summary = 'Print a ~/.ssh/config Host entry for a session (VS Code Remote-SSH)'
  static description = `Prints a Host entry named gpu-cosplay-NAME with the session's port, user and key, for VS Code's Remote-SSH or plain ssh. The container's host key (made fresh for each container, recorded by \`up\` at its first login) is pinned in ~/.ssh/gpu-cosplay/gpu-cosplay-NAME.known_hosts, with StrictHostKeyChecking yes: whatever else answers on that port later is refused. NAME may be left out when you have exactly one session.

With --install the entry goes to ~/.ssh/gpu-cosplay/NAME.conf, and ~/.ssh/config gets one line at its top that includes that folder. Installing again replaces the session's entry (a session brought up again gets a new port), where appending to ~/.ssh/config would leave a stale entry that ssh reads first.

With --host the session is on a GPU box and the entry, named gpu-cosplay-BOX-NAME, reaches its sshd on the box's loopback through the box (ProxyJump), with this machine's key (~/.ssh/gpu-cosplay/client_ed25519, which the box adds to the container) and the container's host key pinned in ~/.ssh/gpu-cosplay/gpu-cosplay-BOX-NAME.known_hosts. A container started again has new host keys: run ssh-config again.`
  static examples = [
    '<%= config.bin %> ssh-config --install',
    '<%= config.bin %> ssh-config alice-rtx_3090',
    '<%= config.bin %> ssh-config alice-rtx_3090 --json',
    '<%= config.bin %> ssh-config alice-rtx_3090 --host gpu-box --install',
  ]
  static args = {name: Args.string({description: 'session name (default: your only session)'})}
  static flags = {
    install: Flags.boolean({description: 'write the entry to ~/.ssh/gpu-cosplay/NAME.conf and include that folder from ~/.ssh/config'}),
    // what a --host client sends to the box: its public key, for the container's authorized_keys
    'authorize-key': Flags.string({hidden: true, exclusive: ['install', 'host']}),
    ...hostFlag,
  }

  async run(): Promise<SshConfigResult> {
    const {args, flags} = await this.parse(SshConfig)
    const {sshConfigFor} = await import('../client/ssh-config-for.js')
    const result = await sshConfigFor(await this.callContext(), {
      host: flags.host,
      name: args.name,
      install: flags.install,
      authorizeKey: flags['authorize-key'],
      version: this.config.version,
    })
    if (!this.jsonEnabled())
      this.log(
        result.installed
          ? `Wrote ${result.installed.entryFile}${result.installed.includeAdded ? ` and included it from ${result.installed.configFile}` : ''}: ssh ${result.host}`
          : result.entry,
      )
    return result
  }
}
