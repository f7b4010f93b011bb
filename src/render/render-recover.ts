import type {RecoverResult} from '../client/recover-state.js'

/** The text view of `recover`: what each GPU recovered, names released, notes. */
export function renderRecover(r: RecoverResult): string {
  const done = r.gpus.filter((g) => g.recovered.length > 0)
  const lines = done.length === 0 ? ['Nothing to recover.'] : done.map((g) => `${g.name} ${g.uuid}: recovered ${g.recovered.join(', ')}`)
  if (r.releasedNames.length > 0) lines.push(`released names of sessions that never started: ${r.releasedNames.join(', ')}`)
  lines.push(...r.notes.map((n) => `note: ${n}`))
  return lines.join('\n')
}
