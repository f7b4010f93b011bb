import type {ResetResult} from '../client/force-reset.js'

/** The text view of `reset`: how the GPU was restored, which sessions ended, notes. */
export function renderReset(r: ResetResult): string {
  const how = r.mode === 'journal' ? 'from the journal' : 'to driver defaults (no usable record)'
  return [`GPU ${r.gpuIndex} restored ${how}; ended: ${r.endedSessions.join(', ') || 'none'}`, ...r.notes.map((n) => `note: ${n}`)].join('\n')
}
