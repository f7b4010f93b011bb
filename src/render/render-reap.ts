import type {ReapResult} from '../client/reap-sessions.js'
import {formatDuration} from '../core/duration.js'
import {escapeControl} from '../core/failure.js'

/** The text view of `system reap`: who was warned, who was ended, and the reaper's notes. */
export function renderReap(r: ReapResult): string {
  const lines = r.actions.map((a) =>
    a.action === 'warned'
      ? `warned ${escapeControl(a.name)} (${escapeControl(a.owner)}): ends in ${formatDuration(a.inMs ?? 0)} (${a.reason === 'ttl' ? 'TTL' : 'idle'})`
      : `ended ${escapeControl(a.name)} (${escapeControl(a.owner)}): ${a.reason === 'ttl' ? 'its TTL ran out' : 'idle'}`,
  )
  return [...(lines.length > 0 ? lines : ['Nothing to reap.']), ...r.notes.map((n) => `note: ${escapeControl(n)}`)].join('\n')
}
