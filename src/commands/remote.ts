import {Args, Flags, ux} from '@oclif/core'

import {InputError} from '../core/errors.js'
import {packageRoot} from '../core/package-root.js'
import type {InstallResult} from '../remote/install-bundle.js'
import {REMOTE_PROTOCOL} from '../remote/remote-command-line.js'
import {BaseCommand} from '../shell/base-command.js'

export type RemoteInfoResult = {protocol: number; version: string; node: string}
export type RemoteResult = RemoteInfoResult | InstallResult

export default class Remote extends BaseCommand {
  static summary = 'Prepare a GPU box for --host: install this gpu-cosplay there, or show the protocol and version'
  static description = `\`remote install --host BOX\` checks that the box has node >= 20, then copies this gpu-cosplay (dist, bin, catalog, docker, runtime-hooks and its runtime node_modules) over ssh into ~/.cache/gpu-cosplay/<version> on the box; commands given --host BOX then run that copy. The box's own state directory, journal and locks stay on the box.

\`remote info\` prints the protocol and version a client checks before it forwards a command (the handshake).`
  static examples = ['<%= config.bin %> remote install --host ssh://alice@gpu-box', '<%= config.bin %> remote info --json']
  static args = {
    action: Args.string({required: true, options: ['install', 'info'], description: 'install: push this gpu-cosplay to --host; info: protocol and version'}),
  }
  static flags = {
    host: Flags.string({
      description: 'the GPU box: ssh://user@box[:port], user@box, an ~/.ssh/config alias or a hosts.yaml name',
      env: 'GPU_COSPLAY_HOST',
    }),
  }

  async run(): Promise<RemoteResult> {
    const {args, flags} = await this.parse(Remote)
    if (args.action === 'info') {
      const info: RemoteInfoResult = {protocol: REMOTE_PROTOCOL, version: this.config.version, node: process.version}
      if (!this.jsonEnabled()) this.log(`gpu-cosplay ${info.version}, remote protocol ${info.protocol}, node ${info.node}`)
      return info
    }
    if (!flags.host)
      throw new InputError('NO_HOST_GIVEN', 'remote install needs --host (or GPU_COSPLAY_HOST)', {
        fix: ['e.g. gpu-cosplay remote install --host ssh://alice@gpu-box'],
      })
    const [{hostsFrom, openHost}, {installBundle}, {handshake}] = await Promise.all([
      import('../remote/open-host.js'),
      import('../remote/install-bundle.js'),
      import('../remote/run-remote.js'),
    ])
    const hosts = hostsFrom(flags.host)
    if (hosts.length !== 1) throw new InputError('BAD_HOST', `remote install takes one host; --host names ${hosts.length}`)
    const transport = await openHost(hosts[0])
    const quiet = this.jsonEnabled()
    try {
      if (!quiet) ux.action.start(`Installing gpu-cosplay ${this.config.version} on ${hosts[0].label}`)
      const result = await installBundle(transport, packageRoot(), this.config.version)
      // the copy must answer the handshake the way forwarded commands will check it
      await handshake(transport, this.config.version)
      if (!quiet) {
        ux.action.stop('done')
        this.log(`gpu-cosplay ${result.version} is in ${result.dir} on ${result.host} (node ${result.node}, ${Math.round(result.bytes / 1024)} KiB sent)`)
      }
      return result
    } catch (error) {
      if (!quiet) ux.action.stop('failed')
      throw error
    } finally {
      transport.close()
    }
  }
}
