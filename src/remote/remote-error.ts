import {CosplayError, type ExitCode} from '../core/errors.js'

/** The remote box could not be named, reached, trusted or run (exit 5, like Docker/ssh), or it failed with its own code and exit. */
export class RemoteError extends CosplayError {
  constructor(code: string, message: string, options: {fix?: string[]; cause?: unknown; exit?: ExitCode} = {}) {
    super(code, message, options.exit ?? 5, options)
  }
}
