import type {ExtendResult} from '../client/end-sessions.js'
import {formatDuration} from '../core/duration.js'
import {escapeControl} from '../core/failure.js'

/** The text view of `extend`: the session's new end. */
export function renderExtend(r: ExtendResult): string {
  return `${escapeControl(r.name)} now ends at ${r.expiresAt} (${formatDuration(r.timeLeftMs)} left)`
}
