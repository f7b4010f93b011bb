import {Command, ux} from '@oclif/core'

import {errorNotes, isCosplayError} from '../../core/errors.js'
import type {HostResult} from './forward-to-host.js'

type ParseFailure = Error & {oclif?: {exit?: number}}

export type Failure = {code: string; message: string; fix: string[]; exit: number}

/**
 * Every command extends this. Layers throw CosplayError; here, and only here, it becomes one line on
 * stderr (or an error object under --json) and an exit code: 2 bad input, 3 host state, 4 permission, 5 Docker/ssh.
 */
export abstract class BaseCommand extends Command {
  static enableJsonFlag = true

  /**
   * With --host (or GPU_COSPLAY_HOST), runs this very command on the GPU box instead and renders its result with
   * this command's renderer; null means "run here". Every GPU-touching command calls it right after parse.
   */
  protected async forwardToHost<T>(
    host: string | undefined,
    render: (result: T) => string,
    merge?: (perHost: HostResult<T>[]) => T,
  ): Promise<{result: T} | null> {
    if (host === undefined || host.trim() === '') return null
    const {forwardToHosts} = await import('./forward-to-host.js')
    const quiet = this.jsonEnabled()
    const result = await forwardToHosts<T>({spec: host, commandId: this.id ?? '', argv: this.argv, version: this.config.version, quiet, merge})
    if (!quiet) this.log(render(result))
    return {result}
  }

  protected async catch(error: Error): Promise<unknown> {
    const failure = describeFailure(error)
    printFailure(failure, this.jsonEnabled())
    this.exit(failure.exit)
  }
}

/** ssh and exec: the words after `--` are the command, taken before oclif's parser sees (and consumes) them. */
export function commandAfterDashes(argv: readonly string[]): {options: string[]; command: string[]} {
  const at = argv.indexOf('--')
  return at < 0 ? {options: [...argv], command: []} : {options: argv.slice(0, at), command: argv.slice(at + 1)}
}

/**
 * The only place a failure is printed (BaseCommand.catch and the command-not-found hook both come here), so
 * the one-line format holds for every message, whatever input it echoes.
 */
export function printFailure(failure: Failure, json: boolean): void {
  const safe = escapeFailure(failure)
  if (json) {
    ux.stdout(ux.colorizeJson({error: safe}, {pretty: true}))
  } else {
    const hint = safe.fix.length > 0 ? ` (${safe.fix.join('; ')})` : ''
    process.stderr.write(`gpu-cosplay: ${safe.message}${hint}\n`)
  }
}

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
