import createDebug from 'debug'
import {DEBUG_NS, HOST_ENV} from '../core/names.js'
import type {ExecResult, Executor} from '../core/executor.js'
import {saidOrQuoted} from '../core/quote-output.js'
import {classifySmiFailure, isOutrightRefusal} from './classify-smi-failure.js'
import {SmiError, type SmiErrorDetails} from './smi-error.js'

export {classifySmiFailure} from './classify-smi-failure.js'
export type {SmiFailure, SmiFailureCode} from './classify-smi-failure.js'

const log = createDebug(DEBUG_NS.host)

/** A hung driver makes nvidia-smi block forever; 30 s is well above a -q on an 8-GPU box (about 1-2 s). */
export const DEFAULT_SMI_TIMEOUT_MS = 30_000

export type SmiOptions = {
  /** the nvidia-smi executable: a bare name is looked up on PATH */
  readonly path: string
  /** run mutations as `sudo -n nvidia-smi ...`; reads never need root */
  readonly sudo: boolean
  readonly timeoutMs?: number
}

export function smiPathFrom(env: Readonly<Record<string, string | undefined>>): string {
  const fromEnv = env[HOST_ENV.nvidiaSmi]
  return fromEnv !== undefined && fromEnv.trim() !== '' ? fromEnv : 'nvidia-smi'
}

/**
 * The one funnel for nvidia-smi. It builds argv, runs it through the executor, and turns any failure into an
 * SmiError carrying argv and the line that explains it. Callers get stdout of a successful call and parse it.
 */
export class Smi {
  private calls = 0

  constructor(
    private readonly executor: Executor,
    private readonly options: SmiOptions,
  ) {}

  /** how many times nvidia-smi has been started through this funnel */
  get callCount(): number {
    return this.calls
  }

  read(args: readonly string[]): Promise<string> {
    return this.run([this.options.path, ...args], args, false)
  }

  /** A change: its failure says whether it was refused outright (SmiError.refused), so that it changed nothing. */
  mutate(args: readonly string[]): Promise<string> {
    const argv = this.options.sudo ? ['sudo', '-n', this.options.path, ...args] : [this.options.path, ...args]
    return this.run(argv, args, true)
  }

  private async run(argv: readonly string[], args: readonly string[], isChange: boolean): Promise<string> {
    this.calls += 1
    // Messages name the command as a user would type it; argv on the error keeps the real path and sudo.
    const shown = ['nvidia-smi', ...args].join(' ')
    const started = Date.now()
    let result: ExecResult
    try {
      result = await this.executor.run(argv, {timeoutMs: this.options.timeoutMs ?? DEFAULT_SMI_TIMEOUT_MS})
    } catch (error) {
      const failure = notStarted(error, {argv, line: null, exitCode: null, stdout: '', refused: isChange}, shown, argv[0])
      log('%o -> %s in %d ms', argv, failure.code, Date.now() - started)
      throw failure
    }

    if (result.timedOut) {
      log('%o -> SMI_TIMEOUT in %d ms', argv, Date.now() - started)
      throw new SmiError(
        'SMI_TIMEOUT',
        `${shown} did not finish within ${this.options.timeoutMs ?? DEFAULT_SMI_TIMEOUT_MS} ms`,
        {argv, line: null, exitCode: null, stdout: result.stdout},
        {fix: ['check the driver with `nvidia-smi` by hand; a hung GPU may need an administrator']},
      )
    }

    if (result.exitCode !== 0) {
      const printed = `${result.stderr}\n${result.stdout}`
      const failure = classifySmiFailure(printed, result.exitCode)
      log('%o -> exit %d %s (%s) in %d ms', argv, result.exitCode, failure.code, failure.line, Date.now() - started)
      throw new SmiError(
        failure.code,
        `${shown} failed: ${saidOrQuoted(failure.reason, result.exitCode, result.stderr, result.stdout)}`,
        {argv, line: failure.line, exitCode: result.exitCode, stdout: result.stdout, refused: isChange && isOutrightRefusal(printed)},
        {exit: failure.exit, fix: fixFor(failure.code)},
      )
    }

    log('%o -> ok in %d ms', argv, Date.now() - started)
    return result.stdout
  }
}

/** Why the program could not be started at all, from the spawn error's errno, with what to do about it (a change not started changed nothing). */
function notStarted(error: unknown, details: SmiErrorDetails, shown: string, program: string): SmiError {
  const errno = (error as NodeJS.ErrnoException | undefined)?.code
  if (errno === 'ENOENT') {
    return new SmiError('SMI_NOT_FOUND', `${program} was not found`, details, {
      cause: error,
      fix: [`install the NVIDIA driver, or point ${HOST_ENV.nvidiaSmi} at nvidia-smi`],
    })
  }
  if (errno === 'EACCES') {
    return new SmiError('SMI_NOT_EXECUTABLE', `${program} cannot be run: permission denied (not executable, or a directory)`, details, {
      cause: error,
      fix: [`make it executable (chmod +x ${program}), or point ${HOST_ENV.nvidiaSmi} at an executable nvidia-smi`],
    })
  }
  const reason = errno ?? (error instanceof Error ? error.message : String(error))
  return new SmiError('SMI_FAILED', `${shown} could not be started (${reason})`, details, {cause: error, fix: ['rerun with DEBUG=gpu-cosplay* for details']})
}

function fixFor(code: string): string[] {
  switch (code) {
    case 'SMI_PERMISSION':
      return ['run as root, or allow passwordless sudo for nvidia-smi (gpu-cosplay uses sudo -n when it may)']
    case 'MIG_NO_FREE_SLOT':
      return ['see who holds the slices: gpu-cosplay status']
    case 'GPU_IN_USE':
      return ['stop the processes on that GPU (nvidia-smi lists them), then retry']
    case 'SMI_NOT_FOUND_INSTANCE':
      return ['list what exists: nvidia-smi mig -lgi']
    default:
      return []
  }
}
