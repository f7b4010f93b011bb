import {Command} from '@oclif/core'

import {isCosplayError} from '../../core/errors.js'

type ParseFailure = Error & {oclif?: {exit?: number}}

/**
 * Every command extends this. Layers throw CosplayError; here, and only here, it becomes one line on
 * stderr (or an error object under --json) and an exit code: 2 bad input, 3 host state, 4 permission, 5 Docker/ssh.
 */
export abstract class BaseCommand extends Command {
  static enableJsonFlag = true

  protected async catch(error: Error): Promise<unknown> {
    const {code, message, fix, exit} = describeFailure(error)
    if (this.jsonEnabled()) {
      this.logJson({error: {code, message, fix, exit}})
    } else {
      const hint = fix.length > 0 ? ` (${fix.join('; ')})` : ''
      process.stderr.write(`gpu-cosplay: ${message}${hint}\n`)
    }
    this.exit(exit)
  }
}

export function describeFailure(error: Error): {code: string; message: string; fix: string[]; exit: number} {
  if (isCosplayError(error)) return {code: error.code, message: error.message, fix: error.fix, exit: error.exit}
  const parseExit = (error as ParseFailure).oclif?.exit
  if (parseExit !== undefined && parseExit !== 0) {
    // oclif's flag and argument errors are multi-line; the first line names the problem.
    const firstLine = error.message.split('\n').find((line) => line.trim() !== '') ?? error.message
    return {code: 'BAD_USAGE', message: firstLine.trim(), fix: ['see --help'], exit: 2}
  }
  return {code: 'INTERNAL', message: `internal error: ${error.message}`, fix: ['rerun with DEBUG=gpu-cosplay* for details'], exit: 1}
}
