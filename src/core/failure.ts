import {errorNotes, isCosplayError} from './errors.js'

/** A failure as it is reported: one line on stderr (or the error object under --json) and an exit code. */
export type Failure = {code: string; message: string; fix: string[]; exit: number}

type ParseFailure = Error & {oclif?: {exit?: number}}

/** A failure as it may be shown: control characters in its message and fix made visible. */
export function escapeFailure(failure: Failure): Failure {
  return {...failure, message: escapeControl(failure.message), fix: failure.fix.map((line) => escapeControl(line))}
}

const NAMED_ESCAPES: Record<string, string> = {'\n': '\\n', '\r': '\\r', '\t': '\\t', '\u001b': '\\e'}

/**
 * Shows C0 and C1 control characters (newline, ESC, BEL, CSI...) as visible escapes, so a name typed with a
 * newline or a terminal escape can neither break the one-line error nor drive the user's terminal.
 */
export function escapeControl(text: string): string {
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (char) => NAMED_ESCAPES[char] ?? `\\x${char.charCodeAt(0).toString(16).padStart(2, '0')}`)
}

/** What failed, for the printer. Notes a layer added on the way out (what it left behind, "run gpu-cosplay recover") come first in the hint. */
export function describeFailure(error: Error): Failure {
  const notes = errorNotes(error)
  if (isCosplayError(error)) return {code: error.code, message: error.message, fix: [...notes, ...error.fix], exit: error.exit}
  const parseExit = (error as ParseFailure).oclif?.exit
  if (parseExit !== undefined && parseExit !== 0) {
    return {code: 'BAD_USAGE', message: usageLine(error.message), fix: ['see --help'], exit: 2}
  }
  return {code: 'INTERNAL', message: `internal error: ${error.message}`, fix: [...notes, 'rerun with DEBUG=gpu-cosplay* for details'], exit: 1}
}

/**
 * oclif's flag and argument errors are multi-line, and their first line alone often says nothing
 * ("Parsing --host-gpu", "The following errors occurred:"): fold them into one line that names the problem.
 */
export function usageLine(message: string): string {
  const lines = message
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !/^See more help with/i.test(line))
  const [first = message.trim(), second] = lines
  if (second === undefined) return first
  if (/^The following errors occurred:?$/i.test(first)) return second
  const parsing = /^Parsing (\S+)$/.exec(first)
  if (parsing) return `${parsing[1]}: ${second}`
  // "Missing 1 required arg:" followed by "gpu  target GPU, e.g. 3090": keep the name, not its description
  if (first.endsWith(':')) return `${first} ${second.split(/\s{2,}/)[0]}`
  return first
}
