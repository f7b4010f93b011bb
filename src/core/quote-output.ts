/** How much of a program's output an error quotes: enough to recognise it, never a screenful. */
const MAX_LINES = 3
const MAX_CHARACTERS = 200

// eslint-disable-next-line no-control-regex -- matching terminal sequences is the point
const TERMINAL_SEQUENCE = /\u001b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\u0007\u001b]*(?:\u0007|\u001b\\)?|[@-Z\\-_])/g
// Not text: C0 controls (tab aside), DEL, C1 controls, U+FFFD (what invalid UTF-8 was decoded to), and the
// zero-width and direction controls that would hide or reorder what is shown.
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const NOT_TEXT = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ufffd\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff]+/g

/**
 * A short, printable quote of what a program printed, for an error message: its first few non-blank lines (at most
 * 200 characters, "..." where cut), joined by a visible \n, with terminal sequences dropped and each run of other
 * non-text bytes (control characters, invalid UTF-8) shown as one "?", followed by the output's size, e.g.
 * `"Profile list moved to --format=json" (36 bytes)`. Never the raw bytes, whatever was printed.
 * The size counts the text as the executor handed it over: an invalid UTF-8 sequence as one byte, without the final
 * newline it drops. Several outputs (stderr, then stdout) are quoted as one, and their sizes added.
 */
export function quoteOutput(...outputs: readonly string[]): string {
  const bytes = outputs.reduce((sum, output) => sum + Buffer.byteLength(output.replace(/\ufffd/g, '?'), 'utf8'), 0)
  const lines = outputs
    .join('\n')
    .replace(TERMINAL_SEQUENCE, '')
    .split(/\r\n|\r|\n/)
    .map((line) => line.replace(NOT_TEXT, '?').replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '')
  if (lines.length === 0) return bytes === 0 ? 'no output' : `no text (${size(bytes)})`
  const joined = lines.slice(0, MAX_LINES).join('\n')
  const characters = [...joined] // by code point: a cut never splits a surrogate pair
  const isCut = lines.length > MAX_LINES || characters.length > MAX_CHARACTERS
  const excerpt = characters.slice(0, MAX_CHARACTERS).join('').replace(/[\\"]/g, '\\$&').replace(/\n/g, '\\n')
  return `"${excerpt}${isCut ? '...' : ''}" (${size(bytes)})`
}

function size(bytes: number): string {
  return bytes === 1 ? '1 byte' : `${bytes} bytes`
}

/**
 * What a failed program said, for an error message: its one-line reason as it is when that is short printable text
 * (as nvidia-smi, sudo and MPS control word theirs), else the exit status and a quote of all it printed.
 */
export function saidOrQuoted(reason: string | null, exitCode: number, ...outputs: readonly string[]): string {
  return reason !== null && /^[ -~]{1,200}$/.test(reason) ? reason : `exit status ${exitCode}, ${quoteOutput(...outputs)}`
}
