import type {ExecOptions, ExecResult, Executor} from '../../../src/core/executor.js'

/** Answers every call with one scripted result (or throws the scripted Error) and records what it was asked to run. */
export class ScriptedExecutor implements Executor {
  readonly calls: Array<{argv: string[]; options?: ExecOptions}> = []
  constructor(private readonly answer: Partial<ExecResult> | Error) {}

  /** the argv of each call, in order */
  get argvs(): string[][] {
    return this.calls.map((call) => call.argv)
  }

  async run(argv: readonly string[], options?: ExecOptions): Promise<ExecResult> {
    this.calls.push({argv: [...argv], options})
    if (this.answer instanceof Error) throw this.answer
    return {exitCode: 0, stdout: '', stderr: '', timedOut: false, ...this.answer}
  }
}
