import type {ExecOptions, ExecResult, Executor} from './executor.js'

/**
 * Runs processes on this machine with nano-spawn (loaded on first use). Not execa: its import alone costs
 * ~100 ms of every GPU command's start-up, for features (verbose logging, pipes, transforms) this tool never uses.
 */
export class LocalExecutor implements Executor {
  async run(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const {default: spawn, SubprocessError} = await import('nano-spawn')
    const [file, ...args] = argv
    // Our own timer, not spawn's `timeout`: Node arms that one until the child exits, and a child that could not
    // be started never exits, so the timer alone would keep this process alive for the whole timeout.
    const abort = new AbortController()
    let timedOut = false
    const timer =
      options.timeoutMs === undefined
        ? null
        : setTimeout(() => {
            timedOut = true
            abort.abort()
          }, options.timeoutMs)
    try {
      const result = await spawn(file, args, {
        signal: abort.signal,
        env: options.env,
        ...(options.passFd !== undefined
          ? {stdio: [options.input !== undefined ? {string: options.input} : 'pipe', 'pipe', 'pipe', options.passFd]}
          : options.input !== undefined
            ? {stdin: {string: options.input}}
            : {}),
        ...(options.uid !== undefined ? {uid: options.uid} : {}),
        ...(options.gid !== undefined ? {gid: options.gid} : {}),
        // Its own process group: a terminal's Ctrl-C reaches only us, so the step in flight can finish
        // (a GPU change cut off half-way is worse than one that completes and is then undone).
        detached: true,
      })
      return {exitCode: 0, stdout: result.stdout, stderr: result.stderr, timedOut: false}
    } catch (error) {
      if (!(error instanceof SubprocessError)) throw error
      const failed = error as InstanceType<typeof SubprocessError> & {exitCode?: number; signalName?: string}
      if (timedOut) return {exitCode: 124, stdout: failed.stdout, stderr: failed.stderr, timedOut: true}
      // could not be started at all (ENOENT, EACCES): an error, as a missing program must not look like exit 127
      if (failed.exitCode === undefined && failed.signalName === undefined) throw (failed.cause as Error | undefined) ?? failed
      return {exitCode: failed.exitCode ?? 1, stdout: failed.stdout, stderr: failed.stderr, timedOut: false}
    } finally {
      if (timer) clearTimeout(timer)
    }
  }
}
