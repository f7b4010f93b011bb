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
    return {code: 'BAD_USAGE', message: usageLine(error.message), fix: ['see --help'], exit: 2}
  }
  return {code: 'INTERNAL', message: `internal error: ${error.message}`, fix: ['rerun with DEBUG=gpu-cosplay* for details'], exit: 1}
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
