import {HostError, type ExitCode} from '../core/errors.js'

export type SmiErrorDetails = {
  /** the argv that ran, sudo prefix included, so a log or bug report can replay it */
  readonly argv: readonly string[]
  /** the nvidia-smi line the code was taken from, verbatim; null when it printed nothing useful */
  readonly line: string | null
  readonly exitCode: number | null
  /** stdout as printed: a -cgi that fails half-way still lists the instances it made, and undo needs them */
  readonly stdout: string
}

/** A failed nvidia-smi call. `code` is stable (see classifySmiFailure); the other fields are for callers that salvage output. */
export class SmiError extends HostError {
  readonly argv: readonly string[]
  readonly line: string | null
  readonly exitCode: number | null
  readonly stdout: string

  constructor(code: string, message: string, details: SmiErrorDetails, options: {exit?: ExitCode; fix?: string[]; cause?: unknown} = {}) {
    super(code, message, options)
    this.argv = details.argv
    this.line = details.line
    this.exitCode = details.exitCode
    this.stdout = details.stdout
  }
}

export function isSmiError(error: unknown, code?: string): error is SmiError {
  return error instanceof SmiError && (code === undefined || error.code === code)
}
