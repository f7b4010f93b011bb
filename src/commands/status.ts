import type {HostView} from '../client/read-host-status.js'
import {Flags} from '@oclif/core'

import {InputError} from '../core/errors.js'
import {BaseCommand, printFailure} from '../shell/base-command.js'
import {renderPs} from './ps.js'
import {hostsFlag} from '../shell/host-flag.js'
import {type BoxStyle, renderBox, terminalStyle} from './support/render-box.js'

/** with several --host boxes: each box's view, under its name */
export type StatusResult = HostView | {hosts: Array<HostView & {host: string}>}

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
    const {readHostStatus} = await import('../client/read-host-status.js')
    const status = await readHostStatus()
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
    const {readHostStatus} = await import('../client/read-host-status.js')
    const {watchScreen} = await import('../shell/watch-screen.js')
    let last: HostView | undefined
    await watchScreen({
      intervalMs: everyMs,
      async frame() {
        last = await readHostStatus()
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

/** One box, or several: each box's GPUs and notes under its name, then one session table for all of them. */
export function renderStatusResult(r: StatusResult, style?: BoxStyle): string {
  if (!('hosts' in r)) return renderStatus(r, style)
  const lines = r.hosts.flatMap((h) => [`== ${h.host}`, ...renderBox(h, style), ...noteLines(h), ''])
  lines.push(renderPs(r.hosts.flatMap((h) => h.sessions.map((s) => ({host: h.host, ...s})))))
  return lines.join('\n')
}

/** the box picture (each GPU's memory slices and who holds them), the session table, then the notes */
export function renderStatus(s: HostView, style?: BoxStyle): string {
  const notes = noteLines(s)
  return [...renderBox(s, style), renderPs(s.sessions), ...(notes.length > 0 ? ['', ...notes] : [])].join('\n')
}

/**
 * what is wrong or worth knowing beyond the GPUs: Docker unreachable, orphan containers, files in the state folder
 * that were not trusted, an unshared state folder
 */
function noteLines(s: HostView): string[] {
  return [
    ...s.gpus.flatMap((g) => g.orphanInstances.map((id) => `ORPHAN GPU ${g.index} GI ${id} (? on the strip): no gpu-cosplay session owns it`)),
    ...(s.containers.reachable ? [] : [`containers: Docker not reachable (${s.containers.reason})`]),
    ...s.containers.orphans.map(
      (c) => `ORPHAN container ${c.name} (${c.state}): session ${c.session} has no record; remove it with docker rm -f ${c.id.slice(0, 12)}`,
    ),
    ...(s.refusedFiles ?? []).map((f) => `REFUSED ${f.message}; whoever planted it may want to redirect gpu-cosplay: mv ${f.file} ${f.file}.bad`),
    ...(s.sharedStateDir ? [] : [`note: state is kept in ${s.stateDir}, not shared with other users`]),
  ]
}
