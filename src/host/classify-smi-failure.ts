import type {ExitCode} from '../core/errors.js'

export type SmiFailureCode =
  | 'SMI_NOT_FOUND'
  | 'SMI_PERMISSION'
  | 'MIG_NO_FREE_SLOT'
  | 'GPU_IN_USE'
  | 'SMI_NOT_SUPPORTED'
  | 'SMI_NOT_FOUND_INSTANCE'
  | 'SMI_INVALID_ARGUMENT'
  | 'NO_GPU'
  | 'SMI_FAILED'

export type SmiFailure = {
  readonly code: SmiFailureCode
  readonly exit: ExitCode
  /** the line the code was taken from (whitespace-collapsed); null when nothing useful was printed */
  readonly line: string | null
  /** the short reason nvidia-smi gave, e.g. "Insufficient Resources"; the whole line when it has no "...: Reason" tail */
  readonly reason: string | null
}

type Rule = {code: SmiFailureCode; pattern: RegExp}

// Order matters within one line only: each line is tried against every rule before the next line is read.
const RULES: readonly Rule[] = [
  // sudo -n and the "command not found" of a wrapper come before nvidia-smi's own words.
  {code: 'SMI_NOT_FOUND', pattern: /command not found|No such file or directory/i},
  {code: 'SMI_PERMISSION', pattern: /Insufficient Permissions|not permitted|does not have permission|a password is required|permission denied/i},
  {code: 'MIG_NO_FREE_SLOT', pattern: /Insufficient Resources/i},
  {code: 'GPU_IN_USE', pattern: /In use by another client|currently being used by one or more other processes/i},
  {code: 'SMI_NOT_SUPPORTED', pattern: /not supported/i},
  {code: 'NO_GPU', pattern: /No devices were found/i},
  {code: 'SMI_NOT_FOUND_INSTANCE', pattern: /No (GPU|compute) instances? found|\bNot Found\b/i},
  {code: 'SMI_INVALID_ARGUMENT', pattern: /Invalid Argument|is not a valid|Invalid combination|not a valid (value|profile)/i},
]

// Lines that carry no reason: the trailer nvidia-smi prints after any error, its success lines (a -cgi list can
// succeed for some entries before it fails), and the "All done." of a call that still exits non-zero.
const NOISE = /^(Terminating early due to previous errors\.?|All done\.?|Successfully (created|destroyed) .*)$/i

const EXIT_BY_CODE: Record<SmiFailureCode, ExitCode> = {
  SMI_NOT_FOUND: 3,
  SMI_PERMISSION: 4,
  MIG_NO_FREE_SLOT: 3,
  GPU_IN_USE: 3,
  SMI_NOT_SUPPORTED: 3,
  SMI_NOT_FOUND_INSTANCE: 3,
  SMI_INVALID_ARGUMENT: 3,
  NO_GPU: 3,
  SMI_FAILED: 3,
}

// nvidia-smi(1) RETURN VALUE: 2 invalid argument, 3 not available on this device, 4 no permission, 6 not found.
const CODE_BY_EXIT: Record<number, SmiFailureCode> = {
  2: 'SMI_INVALID_ARGUMENT',
  3: 'SMI_NOT_SUPPORTED',
  4: 'SMI_PERMISSION',
  6: 'SMI_NOT_FOUND_INSTANCE',
}

/**
 * Turns what a failed nvidia-smi (or sudo) printed into a stable code. Pass stderr first: sudo writes there,
 * while nvidia-smi writes most of its errors to stdout. The text is matched before the exit status, because
 * the same exit status covers many causes.
 */
export function classifySmiFailure(text: string, exitCode?: number): SmiFailure {
  const lines = text
    .split(/\r?\n/)
    .map((raw) => raw.replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '' && !NOISE.test(line))
  for (const line of lines) {
    const rule = RULES.find((candidate) => candidate.pattern.test(line))
    if (rule) return {code: rule.code, exit: EXIT_BY_CODE[rule.code], line, reason: reasonOf(line)}
  }
  const line = lines[0] ?? null
  const code = (exitCode !== undefined && CODE_BY_EXIT[exitCode]) || 'SMI_FAILED'
  return {code, exit: EXIT_BY_CODE[code], line, reason: line === null ? null : reasonOf(line)}
}

const TRAILER = /^Terminating early due to previous errors\.?$/i

/**
 * Whether a failed change was refused outright, so that it changed nothing: every line printed (besides the
 * "Terminating early" trailer) is a refusal nvidia-smi or sudo names ("Insufficient Permissions", "a password is
 * required", "Insufficient Resources", "In use by another client"...). A line of anything else (a success line of
 * a -cgi that failed half-way, a "pending" warning, "All done.", an unknown error, nothing at all) leaves the
 * outcome open: the change may have happened.
 */
export function isOutrightRefusal(text: string): boolean {
  const lines = text
    .split(/\r?\n/)
    .map((raw) => raw.replace(/\s+/g, ' ').trim())
    .filter((line) => line !== '' && !TRAILER.test(line))
  return lines.length > 0 && lines.every((line) => !/^Warning\b|pending/i.test(line) && RULES.some((rule) => rule.pattern.test(line)))
}

/**
 * "Unable to create ... profile 9: Insufficient Resources" -> "Insufficient Resources". Only lines that open with
 * Unable/Failed/Warning/Error are cut, since elsewhere the head is the news ("No GPU instances found: Not Found").
 * Bus IDs hold colons too, so only a trailing run of words counts as the reason.
 */
function reasonOf(line: string): string {
  if (!/^(Unable|Failed|Warning|Error)\b/i.test(line)) return line
  const match = /:\s*([A-Za-z][A-Za-z ]*[A-Za-z])\.?$/.exec(line)
  return match ? match[1] : line
}
