import type {ReportResult} from '../client/fit-report.js'

const gib = (bytes: number) => `${(bytes / 1024 ** 3).toFixed(2)} GiB`

/** The text view of `report`: each process's peak memory against the cap. */
export function renderReport(r: ReportResult): string {
  if (r.rows.length === 0) return `No fit report yet in ${r.file} (a Python process that uses CUDA writes one line when it exits).`
  const lines = r.rows.map((row) => {
    const verdict = row.fits ? `headroom ${gib(row.headroomBytes)}` : `would OOM on the target (${gib(-row.headroomBytes)} over)`
    return `pid ${String(row.pid).padEnd(7)} reserved ${gib(row.peakReservedBytes)}  allocated ${gib(row.peakAllocatedBytes)}  cap ${gib(row.capBytes)}  ${verdict}  ${row.command}`
  })
  if (r.skippedLines > 0) lines.push(`(${r.skippedLines} unreadable line(s) skipped)`)
  return lines.join('\n')
}
