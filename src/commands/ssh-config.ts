import {homedir} from 'node:os'
import {join} from 'node:path'

import {Args, Flags} from '@oclif/core'

import {ContainerError} from '../core/errors.js'
import {BaseCommand} from './support/base-command.js'
import {hostFlag} from './support/host-flag.js'

export type SshConfigResult = {
  session: string
  host: string
  hostName: string
  port: number
  user: string
  identityFile: string
  /** the container's ssh host key, pinned in knownHostsFile */
  hostKey: string | null
  /** the GPU box the entry jumps through (with --host) */
  proxyJump: string | null
  knownHostsFile: string | null
  entry: string
  /** with --install: where the entry was written; null without */
  installed: {entryFile: string; configFile: string; includeAdded: boolean} | null
}

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
    const box = flags.host?.trim() ? null : (await import('../system/ask-engine.js')).memberOfBox()
    const result = flags.host?.trim()
      ? await (
          await import('./support/session-on-host.js')
        ).sshConfigOnHost({spec: flags.host, name: args.name, install: flags.install, version: this.config.version})
      : box
        ? await (await import('./support/session-on-host.js')).sshConfigOnThisBox(box, {name: args.name, install: flags.install})
        : await this.configHere(args.name, flags.install, flags['authorize-key'])
    if (!this.jsonEnabled())
      this.log(
        result.installed
          ? `Wrote ${result.installed.entryFile}${result.installed.includeAdded ? ` and included it from ${result.installed.configFile}` : ''}: ssh ${result.host}`
          : result.entry,
      )
    return result
  }

  private async configHere(name: string | undefined, install: boolean, authorizeKey: string | undefined): Promise<SshConfigResult> {
    const [{accessSession, assertPublicKeyLine, authorizeKeyInSession, identityFor, sessionHostKey}, {sessionAlias, sshConfigEntry}, {writeSessionKnownHosts}] =
      await Promise.all([import('./support/session-access.js'), import('../container/connect-hints.js'), import('./support/session-known-hosts.js')])
    const access = accessSession(name)
    const c = access.container
    if (c.sshPort === null || c.sshHost === null) {
      throw new ContainerError('NO_SSHD', `session "${c.session}" runs an image without sshd`, {
        fix: [`use gpu-cosplay ssh ${c.session} or gpu-cosplay exec ${c.session} -- CMD`],
      })
    }
    // a bad key is refused before a key pair is made for this session
    if (authorizeKey !== undefined) assertPublicKeyLine(authorizeKey)
    const identity = await identityFor(access)
    const hostKey = authorizeKey === undefined ? await sessionHostKey(access, identity) : (await authorizeKeyInSession(access, authorizeKey, identity)).hostKey
    const host = sessionAlias(c.session)
    const sshDir = join(homedir(), '.ssh')
    // asked by a client (--host, or a member of this box): it pins the key on its side; nothing is written here
    const asked = authorizeKey !== undefined
    const knownHostsFile = asked ? null : writeSessionKnownHosts(sshDir, host, hostKey)
    const entry = knownHostsFile === null ? '' : sshConfigEntry(c, identity.privateKeyPath, knownHostsFile)
    let installed: SshConfigResult['installed'] = null
    if (install && !asked) {
      const {installSshConfig} = await import('./support/install-ssh-config.js')
      installed = installSshConfig(sshDir, c.session, entry)
    }
    return {
      session: c.session,
      host,
      hostName: c.sshHost,
      port: c.sshPort,
      user: c.user,
      identityFile: asked ? '' : identity.privateKeyPath,
      hostKey,
      proxyJump: null,
      knownHostsFile,
      entry,
      installed,
    }
  }
}
