import type {DoctorGpu, DoctorResult} from '../client/doctor-checks.js'
import type {Readiness} from '../core/check.js'
import {fixed, formatTable} from './format-table.js'

const MARK: Record<Readiness, string> = {ok: '[ok]     ', warn: '[warn]   ', missing: '[MISSING]'}

/** The text view of `doctor`: a checklist with the fix under each failed line, then one block per GPU. */
export function renderDoctor(result: DoctorResult): string {
  const width = Math.max(...result.checks.map((c) => c.name.length))
  const lines: string[] = []
  for (const check of result.checks) {
    lines.push(`${MARK[check.status]} ${check.name.padEnd(width)}  ${check.detail}`)
    for (const fix of check.fix) lines.push(`${' '.repeat(10 + width)}  fix: ${fix}`)
  }
  for (const gpu of result.gpus) lines.push('', ...renderGpu(gpu))
  const missing = result.checks.filter((c) => c.status === 'missing').length
  const warned = result.checks.filter((c) => c.status === 'warn').length
  lines.push(
    '',
    missing === 0
      ? `Ready${warned > 0 ? ` (${warned} warning${warned === 1 ? '' : 's'})` : ''}.`
      : `${missing} requirement${missing === 1 ? '' : 's'} missing.`,
  )
  return lines.join('\n')
}

function renderGpu(gpu: DoctorGpu): string[] {
  const value = (v: number | null, unit: string) => (v === null ? '?' : `${v} ${unit}`)
  const mig = !gpu.migCapable ? 'not supported' : `${gpu.migEnabled ? 'enabled' : 'disabled'}${gpu.migPending ? ' (a change is pending a GPU reset)' : ''}`
  const lines = [
    `GPU ${gpu.index}: ${gpu.name} (${gpu.uuid || 'no UUID'})`,
    `  host model  ${gpu.hostModel ?? 'not in the catalog'}`,
    `  MIG         ${mig}`,
    `  power       ${value(gpu.power.min, 'W')} - ${value(gpu.power.max, 'W')}, default ${value(gpu.power.default, 'W')}, now ${value(gpu.power.current, 'W')}`,
    `  clocks      ${value(gpu.clocks.min, 'MHz')} - ${value(gpu.clocks.max, 'MHz')}`,
  ]
  if (gpu.migProfiles.length > 0) {
    const source = gpu.migProfilesSource === 'live' ? 'now (mig -lgip)' : 'from the catalog, as if MIG were on and idle'
    lines.push(`  MIG profiles ${source}:`)
    const rows = gpu.migProfiles.map((p) => [p.name, String(p.id), String(p.smCount), fixed(p.memoryGiB, 2), `${p.free}/${p.total}`])
    lines.push(
      ...formatTable(['PROFILE', 'ID', 'SMs', 'GiB', 'FREE'], rows)
        .split('\n')
        .map((l) => `    ${l}`),
    )
  }
  return lines
}
