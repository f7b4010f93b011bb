import {Flags} from '@oclif/core'

import type {HostView, StatusResult} from '../client/read-host-status.js'
import {InputError} from '../core/errors.js'
import {BaseCommand, printFailure} from '../shell/base-command.js'
import {hostsFlag} from '../shell/host-flag.js'
import {terminalStyle} from '../render/render-box.js'
import {renderStatus, renderStatusResult} from '../render/render-status.js'

export default class Status extends BaseCommand {
  static summary = 'Show the host GPUs with their leases, MIG instances and sessions, and flag orphans'
  static description = `Joins what nvidia-smi shows with what gpu-cosplay recorded: GPU-wide settings held as leases (with the values to restore), every MIG instance and its owning session, sessions whose instance is gone, and instances no session owns. Reads only.

When nvidia-smi is missing or fails, the sessions on record are still listed; the problem is reported with its fix and the exit status is 3.`
  static examples = ['<%= config.bin %> status', '<%= config.bin %> status --json', '<%= config.bin %> status --watch --interval 5']

  static flags = {
    ...hostsFlag,
    watch: Flags.boolean({
      char: 'w',
      description: 'redraw the picture in place until Ctrl-C (reads only, as status does)',
      exclusive: ['json', 'host'],
    }),
    interval: Flags.string({description: 'seconds between two pictures with --watch (default 2)', dependsOn: ['watch']}),
  }

  async run(): Promise<StatusResult> {
    const {flags} = await this.parse(Status)
    const style = terminalStyle()
    if (flags.watch) return this.watch(intervalMs(flags.interval ?? '2'))
    const remote = await this.forwardToHost<StatusResult>(
      flags.host,
      (r) => renderStatusResult(r, style),
      (perHost) => ({
        hosts: perHost.map(({host, result}) => ({host, ...(result as HostView)})),
      }),
    )
    if (remote) return remote.result
    const {perform} = await import('../engine/perform.js')
    const status = await perform({op: 'status', orphans: true}, {progress: null}, this.config.version)
    if (!this.jsonEnabled()) this.log(renderStatus(status, style))
    // The records are still worth showing without the GPUs, but a status that could not read them is not a success.
    if (status.error !== undefined) {
      if (!this.jsonEnabled()) printFailure(status.error, false)
      process.exitCode = status.error.exit
    }
    return status
  }

  /** the same picture, redrawn each interval until Ctrl-C; returns the last one read */
  private async watch(everyMs: number): Promise<StatusResult> {
    const {perform} = await import('../engine/perform.js')
    const {watchScreen} = await import('../shell/watch-screen.js')
    const version = this.config.version
    let last: HostView | undefined
    await watchScreen({
      intervalMs: everyMs,
      async frame() {
        last = await perform({op: 'status', orphans: true}, {progress: null}, version)
        const title = `gpu-cosplay status, every ${everyMs / 1000}s: ${new Date().toLocaleTimeString()}  (Ctrl-C quits)`
        const problem = last.error === undefined ? [] : ['', `${last.error.message} (${last.error.fix.join('; ')})`]
        return [title, '', renderStatus(last, terminalStyle()), ...problem].join('\n')
      },
    })
    return last!
  }
}

function intervalMs(seconds: string): number {
  const value = Number(seconds)
  if (!Number.isFinite(value) || value < 0.2 || value > 3600) {
    throw new InputError('BAD_INTERVAL', `--interval ${seconds} is not a number of seconds from 0.2 to 3600`, {fix: ['e.g. --interval 5']})
  }
  return Math.round(value * 1000)
}
