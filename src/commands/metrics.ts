import {Flags} from '@oclif/core'

import {InputError} from '../core/errors.js'
import {requireRootOnSharedBox} from '../core/call-context.js'
import {BaseCommand} from '../shell/base-command.js'

export type MetricsResult = {url: string}

export default class Metrics extends BaseCommand {
  static summary = 'Serve the box state as Prometheus metrics (/metrics) until stopped'
  static description = `Each scrape reads what status reads (the session records and one nvidia-smi probe; no lock, nothing changed), at most once a second however many scrapers ask, and answers in the Prometheus text format: sessions with their owner, target, slice, SMs, VRAM cap and used memory, expected and target FLOP/s and bandwidth, and per GPU its sessions, free memory slices, power limit, locked clock and MIG mode.

It listens on loopback unless --listen names another address. Stop it with Ctrl-C (or SIGTERM under systemd).`
  static examples = ['<%= config.bin %> metrics', '<%= config.bin %> metrics --listen 0.0.0.0:9477', 'curl -s http://127.0.0.1:9477/metrics']
  static enableJsonFlag = false

  static flags = {
    listen: Flags.string({
      description: 'address and port to serve on, e.g. 127.0.0.1:9477, [::1]:9477 or 0.0.0.0:9477 (port 0: any free port)',
      default: '127.0.0.1:9477',
    }),
  }

  async run(): Promise<MetricsResult> {
    const {flags} = await this.parse(Metrics)
    const {host, port} = parseListen(flags.listen)
    // a member serves as themselves; the box's state comes from the engine, and stays on this machine's loopback
    const call = await this.callContext()
    if (!isLoopback(host)) requireRootOnSharedBox(call, `metrics --listen ${flags.listen}`, 'serves the box to the network')
    if (port !== 0 && port < 1024) requireRootOnSharedBox(call, `metrics --listen ${flags.listen}`, 'takes a privileged port of the host')
    const [{serveMetrics}, {perform}] = await Promise.all([import('../measure/metrics-server.js'), import('../engine/perform.js')])
    const version = this.config.version
    const server = await serveMetrics(host, port, () => perform({op: 'status', orphans: false}, {progress: null}, version))
    this.log(`serving metrics on ${server.url} (Ctrl-C stops)`)
    if (!isLoopback(host)) this.warn(`listening on ${host}, not loopback: anyone who can reach it sees who holds which slice`)
    await server.closed
    return {url: server.url}
  }
}

/** "127.0.0.1:9477", "[::1]:9477", "0.0.0.0:9477", ":9477" (loopback) */
export function parseListen(listen: string): {host: string; port: number} {
  const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(listen.trim())
  const port = match ? Number(match[3]) : Number.NaN
  if (!match || port > 65_535) {
    throw new InputError('BAD_LISTEN', `--listen ${listen} is not ADDRESS:PORT`, {fix: ['e.g. --listen 127.0.0.1:9477 or --listen [::1]:9477']})
  }
  const host = match[1] ?? (match[2] || '127.0.0.1')
  // the one name taken as loopback without asking a resolver (a name like 127.example may resolve anywhere)
  return {host: host === 'localhost' ? '127.0.0.1' : host, port}
}

/** A literal loopback address: 127.0.0.0/8 or ::1, never a name. */
function isLoopback(host: string): boolean {
  return host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host)
}
