/**
 * Every external process goes through an Executor, so that a remote GPU box is a different executor,
 * not a different code path. Only host/smi.ts and the container layer hold one.
 */
/**
 * What a finished command left, however it ran (this host, `docker exec`, ssh): the one shape every exec result
 * extends with what its transport adds.
 */
export type CommandOutput = {
  readonly exitCode: number
  readonly stdout: string
  readonly stderr: string
}

export type ExecResult = CommandOutput & {
  /** true when the process was killed for running past timeoutMs */
  readonly timedOut: boolean
}

export type ExecOptions = {
  timeoutMs?: number
  env?: Record<string, string | undefined>
  input?: string
  /** run as this user (only a root process can); e.g. an MPS daemon belongs to the session's owner */
  uid?: number
  gid?: number
  /**
   * an open descriptor of ours that becomes the child's fd 3 (e.g. a folder opened without following links, which
   * `mount --bind /proc/self/fd/3` binds exactly); nothing else of ours is inherited
   */
  passFd?: number
}

export interface Executor {
  /** Runs argv[0] with the rest as arguments. Never throws for a non-zero exit; throws ENOENT-style errors for a missing program. */
  run(argv: readonly string[], options?: ExecOptions): Promise<ExecResult>
}
