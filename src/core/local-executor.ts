import type {ExecOptions, ExecResult, Executor} from './executor.js'

/** Runs processes on this machine with execa, loaded on first use so read-only commands start fast. */
export class LocalExecutor implements Executor {
  async run(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const {execa} = await import('execa')
    const [file, ...args] = argv
    const result = await execa(file, args, {
      reject: false,
      timeout: options.timeoutMs,
      env: options.env,
      input: options.input,
      ...(options.uid !== undefined ? {uid: options.uid} : {}),
      ...(options.gid !== undefined ? {gid: options.gid} : {}),
      stripFinalNewline: false,
      // A missing binary must surface as an error, not as exit code 127 from a shell.
      shell: false,
      // Its own process group: a terminal's Ctrl-C reaches only us, so the step in flight can finish
      // (a GPU change cut off half-way is worse than one that completes and is then undone).
      detached: true,
    })
    if (result.failed && result.exitCode === undefined && !result.timedOut) {
      // execa 9's result type omits `cause`, which it sets when the process could not be spawned (ENOENT, EACCES).
      throw (result as unknown as {cause?: Error}).cause ?? new Error(result.message)
    }
    return {
      exitCode: result.exitCode ?? (result.timedOut ? 124 : 1),
      stdout: String(result.stdout ?? ''),
      stderr: String(result.stderr ?? ''),
      timedOut: Boolean(result.timedOut),
    }
  }
}
