import {Command, ux} from '@oclif/core'

import type {CallContext} from '../core/call-context.js'
import {describeFailure, escapeFailure, type Failure} from '../core/failure.js'
import type {HostResult} from '../client/forward-to-host.js'

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
    const {forwardToHosts} = await import('../client/forward-to-host.js')
    const quiet = this.jsonEnabled()
    const result = await forwardToHosts<T>({spec: host, commandId: this.id ?? '', argv: this.argv, version: this.config.version, quiet, merge})
    if (!quiet) this.log(render(result))
    return {result}
  }

  /**
   * Who is asking, for a command that acts in this process (not through perform, which makes its own): made once, here
   * at the command's entry, and passed to the use case.
   */
  protected async callContext(): Promise<CallContext> {
    return (await import('../core/call-context.js')).callContextHere()
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
