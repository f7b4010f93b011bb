import {distance} from 'fastest-levenshtein'

import {InputError} from '../core/errors.js'

/**
 * The error for a command name we do not have, with the closest visible command as a did-you-mean. Used by
 * the command_not_found hook and by `help <name>`, so both read the same.
 */
export function unknownCommand(id: string, commandIds: readonly string[], bin: string): InputError {
  // oclif ids join a topic and its command with ":"; users type a space (topicSeparator)
  const typed = (commandId: string) => commandId.replaceAll(':', ' ')
  const suggestion = closestCommand(id, commandIds)
  const fix = suggestion === null ? [`list the commands: ${bin} help`] : [`did you mean ${bin} ${typed(suggestion)}?`, `list the commands: ${bin} help`]
  return new InputError('UNKNOWN_COMMAND', `unknown command "${typed(id)}"`, {fix})
}

/** The nearest command by edit distance, or null when even the nearest is too far to be a typo. */
export function closestCommand(id: string, commandIds: readonly string[]): string | null {
  let best: {id: string; distance: number} | null = null
  for (const candidate of commandIds) {
    const d = distance(id.toLowerCase(), candidate)
    if (best === null || d < best.distance) best = {id: candidate, distance: d}
  }
  if (best === null) return null
  return best.distance <= Math.max(2, Math.floor(best.id.length / 3)) ? best.id : null
}
