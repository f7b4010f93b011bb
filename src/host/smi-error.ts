import {HostError, type ExitCode} from '../core/errors.js'
import {quoteOutput} from '../core/quote-output.js'

export type SmiErrorDetails = {
  /** the argv that ran, sudo prefix included, so a log or bug report can replay it */
  readonly argv: readonly string[]
  /** the nvidia-smi line the code was taken from, verbatim; null when it printed nothing useful */
  readonly line: string | null
  readonly exitCode: number | null
  /** stdout as printed: a -cgi that fails half-way still lists the instances it made, and undo needs them */
  readonly stdout: string
  /** a change that nvidia-smi (or sudo) refused outright, or that could not be started: it changed nothing */
  readonly refused?: boolean
}

/** A failed nvidia-smi call. `code` is stable (see classifySmiFailure); the other fields are for callers that salvage output. */
export class SmiError extends HostError {
  readonly argv: readonly string[]
  readonly line: string | null
  readonly exitCode: number | null
  readonly stdout: string
  readonly refused: boolean

  constructor(code: string, message: string, details: SmiErrorDetails, options: {exit?: ExitCode; fix?: string[]; cause?: unknown} = {}) {
    super(code, message, options)
    this.argv = details.argv
    this.line = details.line
    this.exitCode = details.exitCode
    this.stdout = details.stdout
    this.refused = details.refused ?? false
  }
}

export function isSmiError(error: unknown, code?: string): error is SmiError {
  return error instanceof SmiError && (code === undefined || error.code === code)
}

/**
 * A change that never happened: nvidia-smi ran to its end and refused it (or could not be started). Not a timeout,
 * not an unknown error, not a call that printed anything but its refusal: those may have acted.
 */
export function isRefusedChange(error: unknown): error is SmiError {
  return error instanceof SmiError && error.refused
}

/**
 * nvidia-smi succeeded but printed something this version cannot read (a changed format, or garbage): the
 * SMI_UNPARSEABLE of every parser, never an empty or made-up list. The output is quoted short and printable.
 */
export function smiUnparseable(command: string, text: string): HostError {
  return new HostError('SMI_UNPARSEABLE', `${command} printed something this version cannot read: ${quoteOutput(text)}`, {
    fix: ['report the driver version (nvidia-smi --version) and this output; rerun with DEBUG=gpu-cosplay* for details'],
  })
}
