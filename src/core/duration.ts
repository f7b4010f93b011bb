/** Durations as people type them (`90s`, `30m`, `8h`, `1h30m`, `2d`): TTLs, idle reclaim, queue timeouts. */
import {InputError} from './errors.js'

const UNIT_MS = {s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000} as const
const DURATION = /^(?:\d+[smhd])+$/

/**
 * The longest duration anyone may type: a year and a day. A TTL, a queue timeout or an extension past it is a typo or
 * an attack; bounding it keeps every sum of it with a clock an exact integer that a Date can hold.
 */
export const MAX_DURATION_MS = 366 * UNIT_MS.d

/** Longer texts are refused before they are read: no duration within the bound needs more (`8784h`, `527040m`). */
const MAX_TEXT_LENGTH = 32

/**
 * Milliseconds of a duration, or null when the text is not one (a bare number is refused: its unit would be a guess)
 * or when it is longer than MAX_DURATION_MS.
 */
export function durationMs(text: string): number | null {
  const clean = text.trim().toLowerCase()
  if (clean.length > MAX_TEXT_LENGTH || !DURATION.test(clean)) return null
  let ms = 0
  for (const [, value, unit] of clean.matchAll(/(\d+)([smhd])/g)) {
    // a part has at most 31 digits, so Number() stays finite; a sum past the bound ends the reading at once
    ms += Number(value) * UNIT_MS[unit as keyof typeof UNIT_MS]
    if (ms > MAX_DURATION_MS) return null
  }
  return ms > 0 ? ms : null
}

/** durationMs, or an InputError naming the flag (or setting) that held it. */
export function parseDuration(text: string, what: string): number {
  const ms = durationMs(text)
  if (ms === null) {
    throw new InputError('BAD_DURATION', `${what} ${text.slice(0, 40)}: not a duration of at most ${formatDuration(MAX_DURATION_MS)}`, {
      fix: ['use a number and a unit: 90s, 30m, 8h, 1h30m, 2d', `at most ${formatDuration(MAX_DURATION_MS)}`],
    })
  }
  return ms
}

/** The shortest exact text for a duration: 5400000 -> 1h30m; below a second, 0s. */
export function formatDuration(ms: number): string {
  let left = Math.max(0, Math.round(ms / 1000)) * 1000
  if (left === 0) return '0s'
  let text = ''
  for (const unit of ['d', 'h', 'm', 's'] as const) {
    const count = Math.floor(left / UNIT_MS[unit])
    if (count > 0) text += `${count}${unit}`
    left -= count * UNIT_MS[unit]
  }
  return text
}
