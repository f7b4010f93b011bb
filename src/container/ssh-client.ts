/**
 * ssh2 sessions into a cosplay container. Loaded with `await import()` by the commands that need it.
 * ssh2 is CommonJS: named imports crash under Node, so take the default export apart.
 */
import {createHash} from 'node:crypto'
import type {Duplex, Readable, Writable} from 'node:stream'
import createDebug from 'debug'
import ssh2 from 'ssh2'
import type {Client as ClientType, ClientChannel, ConnectConfig} from 'ssh2'
import {ContainerError, CosplayError} from '../core/errors.js'
import {DEBUG_NS} from '../core/names.js'
import {NOT_YET, pollUntil} from '../core/poll.js'

const {Client, utils} = ssh2
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

export type SshExecResult = {readonly stdout: string; readonly stderr: string; readonly exitCode: number; readonly signal: string | null}

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

type Connected = {client: ClientType; hostKey: string}

/** the key type inside an ssh wire-format public key blob ("ssh-ed25519", ...) */
export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return ''
  const length = blob.readUInt32BE(0)
  return blob.subarray(4, 4 + length).toString('latin1')
}

/** The public key line ("ssh-ed25519 AAAA...") of a key blob as sshd sends it. */
function publicKeyLine(blob: Buffer): string {
  return `${keyTypeOf(blob)} ${blob.toString('base64')}`
}

async function connectOnce(target: SshTarget, readyTimeoutMs: number): Promise<Connected> {
  const sock = target.via ? await target.via() : undefined
  return new Promise((resolve, reject) => {
    const client = new Client()
    let hostKey = ''
    let hostKeyRefused = false
    const config: ConnectConfig = {
      host: target.host,
      port: target.port,
      username: target.username,
      privateKey: target.privateKey,
      readyTimeout: readyTimeoutMs,
      keepaliveInterval: 15000,
      sock,
    }
    const [pinnedType, pinnedBlob] = (target.hostKey ?? '').trim().split(/\s+/)
    // ask for the pinned key's type, or sshd may present another of its keys
    if (target.hostKey) config.algorithms = {serverHostKey: [pinnedType as never]}
    config.hostVerifier = (key: Buffer) => {
      hostKey = publicKeyLine(key)
      hostKeyRefused = target.hostKey !== undefined && !key.equals(Buffer.from(pinnedBlob ?? '', 'base64'))
      return !hostKeyRefused
    }
    let settled = false
    client
      .once('ready', () => {
        settled = true
        resolve({client, hostKey})
      })
      // 'on', not 'once': a reset connection can emit a second error, which would otherwise be thrown
      .on('error', (error) => {
        if (settled) return debug('ssh connection error: %s', error.message)
        settled = true
        client.end()
        reject(hostKeyRefused ? hostKeyMismatch(target, hostKey, error) : error)
      })
      .connect(config)
    // ssh2 leaves Nagle on: the userauth service request then waits out sshd's delayed ACK (~40 ms of a ~80 ms login)
    client.setNoDelay(true)
  })
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
    private readonly client: ClientType,
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
  exec(command: string, options: {stdin?: string | Buffer; timeoutMs?: number} = {}): Promise<SshExecResult> {
    return new Promise((resolve, reject) => {
      this.client.exec(command, (error, channel) => {
        if (error) return reject(new ContainerError('SSH_EXEC_FAILED', `cannot run a command over ssh: ${error.message}`, {cause: error}))
        const stdout: Buffer[] = []
        const stderr: Buffer[] = []
        let exitCode: number | null = null
        let signal: string | null = null
        const timeoutMs = options.timeoutMs ?? SSH_EXEC_TIMEOUT_MS
        const timer = setTimeout(() => {
          channel.close()
          reject(new ContainerError('SSH_EXEC_TIMEOUT', `a command over ssh did not end within ${timeoutMs / 1000} s`, {exit: 5}))
        }, timeoutMs)
        channel.on('close', () => clearTimeout(timer))
        channel.on('data', keep(stdout))
        channel.stderr.on('data', keep(stderr))
        channel.on('exit', (code: number | null, signalName?: string) => {
          exitCode = code
          signal = signalName ?? null
        })
        channel.on('close', () =>
          resolve({
            stdout: Buffer.concat(stdout).toString('utf8'),
            stderr: Buffer.concat(stderr).toString('utf8'),
            exitCode: shellExitCode(exitCode, signal ?? undefined),
            signal,
          }),
        )
        if (options.stdin !== undefined) channel.end(options.stdin)
        else channel.end()
      })
    })
  }

  /**
   * An interactive pty: a login shell when command is null, else the command. Raw mode on the local
   * terminal is the caller's business; call resize() on SIGWINCH.
   */
  interactive(command: string | null, io: InteractiveIo): Promise<InteractiveSession> {
    return new Promise((resolve, reject) => {
      const pty = {term: io.term ?? process.env.TERM ?? 'xterm-256color', rows: io.rows, cols: io.cols}
      const onChannel = (error: Error | undefined, channel: ClientChannel) => {
        if (error) return reject(new ContainerError('SSH_EXEC_FAILED', `cannot open an ssh session: ${error.message}`, {cause: error}))
        let exitCode = -1
        channel.on('exit', (code: number | null, signalName?: string) => {
          exitCode = shellExitCode(code, signalName)
        })
        io.stdin.pipe(channel)
        channel.pipe(io.stdout, {end: false})
        channel.stderr.pipe(io.stderr, {end: false})
        const done = new Promise<number>((resolveDone) =>
          channel.on('close', () => {
            io.stdin.unpipe(channel)
            resolveDone(exitCode)
          }),
        )
        resolve({resize: (rows, cols) => channel.setWindow(rows, cols, 0, 0), done})
      }
      if (command === null) this.client.shell(pty, onChannel)
      else this.client.exec(command, {pty}, onChannel)
    })
  }

  /**
   * Runs a command without a pty, streaming: stdin (if given) is forwarded until it ends, output goes
   * straight to stdout/stderr. Resolves with the exit code (128+n for a signal).
   */
  stream(command: string, io: {stdin?: Readable; stdout: Writable; stderr: Writable}): Promise<number> {
    return new Promise((resolve, reject) => {
      this.client.exec(command, (error, channel) => {
        if (error) return reject(new ContainerError('SSH_EXEC_FAILED', `cannot run a command over ssh: ${error.message}`, {cause: error}))
        let exitCode = -1
        channel.on('exit', (code: number | null, signalName?: string) => {
          exitCode = shellExitCode(code, signalName)
        })
        channel.pipe(io.stdout, {end: false})
        channel.stderr.pipe(io.stderr, {end: false})
        if (io.stdin) io.stdin.pipe(channel)
        else channel.end()
        channel.on('close', () => {
          io.stdin?.unpipe(channel)
          resolve(exitCode)
        })
      })
    })
  }

  close(): void {
    this.client.end()
  }
}

/** The SHA256 fingerprint ssh prints for a public key line, e.g. for a known_hosts check. */
export function fingerprintOf(publicKeyLine: string): string {
  const parsed = utils.parseKey(publicKeyLine)
  if (parsed instanceof Error || Array.isArray(parsed))
    throw new ContainerError('SSH_BAD_KEY', `not a public key: ${parsed instanceof Error ? parsed.message : 'several keys'}`)
  return `SHA256:${createHash('sha256').update(parsed.getPublicSSH()).digest('base64').replace(/=+$/, '')}`
}

const SIGNALS: Record<string, number> = {HUP: 1, INT: 2, QUIT: 3, ABRT: 6, KILL: 9, SEGV: 11, PIPE: 13, ALRM: 14, TERM: 15}
function signalNumber(name: string): number {
  return SIGNALS[name.replace(/^SIG/, '')] ?? 0
}

/** An ssh channel's exit status as a shell reports it: the code, or 128+n for a signal; -1 when neither came. */
export function shellExitCode(code: number | null | undefined, signalName?: string): number {
  return code ?? (signalName ? 128 + signalNumber(signalName) : -1)
}

const SSH_EXEC_TIMEOUT_MS = 60_000
/** as runtime.ts's EXEC_KEEP_BYTES for docker exec (not imported: ssh needs no Docker client loaded) */
const EXEC_KEEP_BYTES = 64 * 1024

/** A data listener that keeps the first EXEC_KEEP_BYTES of a stream and drops the rest. */
function keep(into: Buffer[]): (chunk: Buffer) => void {
  let kept = 0
  return (chunk) => {
    if (kept >= EXEC_KEEP_BYTES) return
    const part = chunk.length <= EXEC_KEEP_BYTES - kept ? chunk : Buffer.from(chunk.subarray(0, EXEC_KEEP_BYTES - kept))
    into.push(part)
    kept += part.length
  }
}
