/**
 * ssh sessions into a cosplay container, on core/ssh-connection.ts (the one ssh2 client): a key of ours, the
 * container's host key pinned, polling while sshd starts, and a command's output capped and timed. Loaded with
 * `await import()` by the commands that need it.
 */
import type {Duplex, Readable, Writable} from 'node:stream'
import createDebug from 'debug'
import {ContainerError, CosplayError} from '../core/errors.js'
import type {CommandOutput} from '../core/executor.js'
import {DEBUG_NS} from '../core/names.js'
import {NOT_YET, pollUntil} from '../core/poll.js'
import {collectSsh, connectSsh, fingerprintOf, pipeSsh, publicKeyLine, shellExitCode, type SshClient, type SshConnected} from '../core/ssh-connection.js'

const debug = createDebug(DEBUG_NS.container)

export type SshTarget = {
  host: string
  port: number
  username: string
  privateKey: string | Buffer
  /** the container's host public key line ("ssh-ed25519 AAAA..."); when given, any other key is refused */
  hostKey?: string
  /** opens the byte stream to sshd (e.g. a tunnel through a GPU box) instead of a TCP connection; called per attempt */
  via?: () => Promise<Duplex>
}

export type ConnectOptions = {
  /** give up after this long; default 15000 */
  timeoutMs?: number
  /** pause between attempts for the first second (sshd is usually up within ~150 ms), then growing to 250 ms; default 10 */
  intervalMs?: number
  /** stops the polling (the session it waits for is being undone) */
  signal?: AbortSignal
}

/** the exit code as a shell reports it (128+n for a signal), and the signal's name */
export type SshExecResult = CommandOutput & {readonly signal: string | null}

export type InteractiveIo = {
  stdin: Readable
  stdout: Writable
  stderr: Writable
  rows: number
  cols: number
  term?: string
}

export type InteractiveSession = {
  resize(rows: number, cols: number): void
  /** resolves with the remote exit code (128+n for a signal, as a shell reports it) */
  readonly done: Promise<number>
}

const AUTH_FAILED = /authentication methods failed/i

async function connectOnce(target: SshTarget, readyTimeoutMs: number): Promise<SshConnected> {
  const sock = target.via ? await target.via() : undefined
  const [pinnedType, pinnedBlob] = (target.hostKey ?? '').trim().split(/\s+/)
  let presented = ''
  let refused = false
  try {
    return await connectSsh({
      host: target.host,
      port: target.port,
      username: target.username,
      auth: {privateKey: target.privateKey},
      sock,
      readyTimeoutMs,
      // ask for the pinned key's type, or sshd may present another of its keys
      ...(target.hostKey ? {hostKeyType: pinnedType} : {}),
      onLateError: (error) => debug('ssh connection error: %s', error.message),
      verifyHostKey: (key) => {
        presented = publicKeyLine(key)
        refused = target.hostKey !== undefined && !key.equals(Buffer.from(pinnedBlob ?? '', 'base64'))
        return !refused
      },
    })
  } catch (error) {
    throw refused ? hostKeyMismatch(target, presented, error) : error
  }
}

/** The container answered with a host key other than the pinned one: never retried. */
function hostKeyMismatch(target: SshTarget, presented: string, cause: unknown): ContainerError {
  return new ContainerError('SSH_HOST_KEY_MISMATCH', `the ssh host key of ${target.host}:${target.port} is not the session's pinned key: refusing to connect`, {
    fix: [`it presented ${presented.split(' ')[0]} ${fingerprintOf(presented)}; a container started again has new host keys`],
    cause,
  })
}

/** One ssh2 connection, logged in. */
export class SshSession {
  private constructor(
    private readonly client: SshClient,
    readonly target: SshTarget,
    /** the host key the container presented ("ssh-ed25519 AAAA..."), the pinned one when one was given */
    readonly hostKey: string,
  ) {}

  /**
   * Polls until a login works: the first connections through docker-proxy are often reset while sshd starts.
   * A refused key is retried only briefly (the entrypoint may still be writing authorized_keys).
   */
  static async connectWithRetry(target: SshTarget, options: ConnectOptions = {}): Promise<SshSession> {
    const timeoutMs = options.timeoutMs ?? 15000
    let pauseMs = options.intervalMs ?? 10
    const started = Date.now()
    const deadline = started + timeoutMs
    let attempts = 0
    let authFailures = 0
    let lastError: unknown
    const failed = () => {
      const refused = AUTH_FAILED.test(String((lastError as Error)?.message))
      return new ContainerError(
        refused ? 'SSH_AUTH_FAILED' : 'SSH_UNREACHABLE',
        refused
          ? `ssh login as ${target.username} on ${target.host}:${target.port} was refused`
          : `no ssh login on ${target.host}:${target.port} within ${Math.round(timeoutMs / 1000)} s (${attempts} attempts)`,
        {fix: ['look at the container log: docker logs <container>'], cause: lastError},
      )
    }
    return pollUntil(
      async () => {
        attempts++
        try {
          const {client, hostKey} = await connectOnce(target, Math.max(1000, Math.min(5000, deadline - Date.now())))
          debug('ssh %s@%s:%d ready after %d attempt(s)', target.username, target.host, target.port, attempts)
          return new SshSession(client, target, hostKey)
        } catch (error) {
          // a refused host key or a failed tunnel does not get better by retrying
          if (error instanceof CosplayError) throw error
          lastError = error
          debug('ssh attempt %d: %s', attempts, (error as Error).message)
          if (AUTH_FAILED.test((error as Error).message) && ++authFailures >= 5) throw failed()
          return NOT_YET
        }
      },
      {
        // from 10 ms, growing by half after the first second, to 250 ms
        intervalMs: () => {
          const now = pauseMs
          if (Date.now() - started > 1000) pauseMs = Math.min(250, pauseMs * 1.5)
          return now
        },
        deadline,
        signal: options.signal,
        timedOut: failed,
      },
    )
  }

  /**
   * Runs a command (through the user's shell, as ssh does) and collects the first EXEC_KEEP_BYTES of each stream. The
   * user's shell reads their ~/.bashrc: one that prints without end or never returns is cut off (`timeoutMs`, default
   * 60 s: SSH_EXEC_TIMEOUT), so a root process never holds more of it, nor waits for it for ever.
   */
  async exec(command: string, options: {stdin?: string | Buffer; timeoutMs?: number} = {}): Promise<SshExecResult> {
    const timeoutMs = options.timeoutMs ?? SSH_EXEC_TIMEOUT_MS
    const collected = await collectSsh(this.client, command, {
      keepBytes: EXEC_KEEP_BYTES,
      timeout: {
        ms: timeoutMs,
        timedOut: () => new ContainerError('SSH_EXEC_TIMEOUT', `a command over ssh did not end within ${timeoutMs / 1000} s`, {exit: 5}),
      },
      onOpen: (channel) => (options.stdin !== undefined ? channel.end(options.stdin) : channel.end()),
    }).catch((error: unknown) => {
      throw error instanceof CosplayError ? error : execFailed('cannot run a command over ssh', error)
    })
    const {stdout, stderr, exitCode, signal} = collected
    return {stdout, stderr, exitCode: shellExitCode(exitCode, signal ?? undefined), signal}
  }

  /**
   * An interactive pty: a login shell when command is null, else the command. Raw mode on the local
   * terminal is the caller's business; call resize() on SIGWINCH.
   */
  interactive(command: string | null, io: InteractiveIo): Promise<InteractiveSession> {
    const pty = {term: io.term ?? process.env.TERM ?? 'xterm-256color', rows: io.rows, cols: io.cols}
    return pipeSsh(this.client, command, {stdin: io.stdin, stdout: io.stdout, stderr: io.stderr, pty}).catch((error: unknown) => {
      throw execFailed('cannot open an ssh session', error)
    })
  }

  /**
   * Runs a command without a pty, streaming: stdin (if given) is forwarded until it ends, output goes
   * straight to stdout/stderr. Resolves with the exit code (128+n for a signal).
   */
  async stream(command: string, io: {stdin?: Readable; stdout: Writable; stderr: Writable}): Promise<number> {
    const piped = await pipeSsh(this.client, command, io).catch((error: unknown) => {
      throw execFailed('cannot run a command over ssh', error)
    })
    return piped.done
  }

  close(): void {
    this.client.end()
  }
}

const SSH_EXEC_TIMEOUT_MS = 60_000
/** as runtime.ts's EXEC_KEEP_BYTES for docker exec (not imported: ssh needs no Docker client loaded) */
const EXEC_KEEP_BYTES = 64 * 1024

function execFailed(what: string, error: unknown): ContainerError {
  return new ContainerError('SSH_EXEC_FAILED', `${what}: ${(error as Error).message}`, {cause: error})
}
