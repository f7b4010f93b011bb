import {readFileSync} from 'node:fs'
import path from 'node:path'

import {Args, Flags} from '@oclif/core'

import {InputError} from '../core/errors.js'
import {BaseCommand} from '../shell/base-command.js'

export type FitRow = {
  pid: number
  command: string
  at: string | null
  card: string | null
  peakReservedBytes: number
  peakAllocatedBytes: number
  capBytes: number
  /** cap minus peak reserved; negative: it would not fit on the target */
  headroomBytes: number
  fits: boolean
}
export type ReportResult = {file: string; rows: FitRow[]; skippedLines: number}

export default class Report extends BaseCommand {
  static summary = "Show how close each process came to the target card's memory"
  static description = `Reads the fit report the costume hook writes when a Python process that used CUDA exits (<workspace>/.gpu-cosplay/fit.jsonl, one line per process) and shows, per process, the peak memory PyTorch reserved and allocated against the cap: the headroom left, or "would OOM on the target". Works after \`down\` too, with --workspace.`
  static examples = ['<%= config.bin %> report', '<%= config.bin %> report --workspace ~/proj --json']
  static args = {name: Args.string({description: 'session name (default: your only session)'})}
  static flags = {workspace: Flags.string({description: "read this workspace instead of the session's"})}

  async run(): Promise<ReportResult> {
    const {args, flags} = await this.parse(Report)
    let workspace = flags.workspace
    if (!workspace) {
      const {accessSession} = await import('../client/session-access.js')
      workspace = accessSession(args.name).container.workspace ?? undefined
      if (!workspace) throw new InputError('NO_WORKSPACE', 'the session has no /workspace bind; pass --workspace DIR')
    }
    const file = path.join(path.resolve(workspace), '.gpu-cosplay', 'fit.jsonl')
    const result = parseFitReport(file, readIfThere(file))
    if (!this.jsonEnabled()) this.log(renderReport(result))
    return result
  }
}

function readIfThere(file: string): string {
  try {
    return readFileSync(file, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return ''
    throw new InputError('REPORT_UNREADABLE', `cannot read ${file}: ${(error as Error).message}`)
  }
}

export function parseFitReport(file: string, text: string): ReportResult {
  const rows: FitRow[] = []
  let skippedLines = 0
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue
    try {
      const r = JSON.parse(line)
      const reserved = Number(r.peakReservedBytes)
      const cap = Number(r.capBytes)
      if (!Number.isFinite(reserved) || !Number.isFinite(cap)) throw new Error('missing numbers')
      rows.push({
        pid: Number(r.pid),
        command: Array.isArray(r.argv) ? r.argv.join(' ') : '',
        at: typeof r.t === 'number' ? new Date(r.t * 1000).toISOString() : null,
        card: r.name ?? r.card ?? null,
        peakReservedBytes: reserved,
        peakAllocatedBytes: Number(r.peakAllocatedBytes) || 0,
        capBytes: cap,
        headroomBytes: cap - reserved,
        fits: reserved <= cap,
      })
    } catch {
      skippedLines++
    }
  }
  return {file, rows, skippedLines}
}

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(2)} GiB`

export function renderReport(r: ReportResult): string {
  if (r.rows.length === 0) return `No fit report yet in ${r.file} (a Python process that uses CUDA writes one line when it exits).`
  const lines = r.rows.map((row) => {
    const verdict = row.fits ? `headroom ${gib(row.headroomBytes)}` : `would OOM on the target (${gib(-row.headroomBytes)} over)`
    return `pid ${String(row.pid).padEnd(7)} reserved ${gib(row.peakReservedBytes)}  allocated ${gib(row.peakAllocatedBytes)}  cap ${gib(row.capBytes)}  ${verdict}  ${row.command}`
  })
  if (r.skippedLines > 0) lines.push(`(${r.skippedLines} unreadable line(s) skipped)`)
  return lines.join('\n')
}
