/**
 * `report`: the fit report the costume hook writes when a Python process that used CUDA exits
 * (<workspace>/.gpu-cosplay/fit.jsonl, one line per process), read from the session's workspace or a given one.
 */
import {readFileSync} from 'node:fs'
import path from 'node:path'

import {InputError} from '../core/errors.js'

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

/**
 * The report in a workspace (a session's, as `session` answered it, or one given), read by this process: on a shared
 * box that is the member's own, so a link there reads only what the member could read anyway.
 */
export function readFitReport(dir: string | null): ReportResult {
  if (!dir) throw new InputError('NO_WORKSPACE', 'the session has no /workspace bind; pass --workspace DIR')
  const file = path.join(path.resolve(dir), '.gpu-cosplay', 'fit.jsonl')
  return parseFitReport(file, readIfThere(file))
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
