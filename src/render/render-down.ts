import type {ClosedSession} from '../client/end-sessions.js'

/** The text view of `down`: each session ended, what it restored, its notes. */
export function renderDown(closed: readonly ClosedSession[]): string {
  if (closed.length === 0) return 'No session to end.'
  return closed
    .flatMap((c) => [
      `Ended ${c.name} (${c.target ?? 'lease hold'})${c.restored.length > 0 ? `; restored ${c.restored.join(', ')} as found before` : ''}`,
      ...c.notes.map((n) => `  note: ${n}`),
    ])
    .join('\n')
}
