/**
 * The one ssh2 client, under both sides that speak ssh: container/ssh-client.ts (a session's container: a key of
 * ours, a pinned host key, polled while sshd starts) and remote/ssh-transport.ts (a GPU box: agent and key files,
 * known_hosts, one ProxyJump). Connecting, the host-key check, keepalives, Nagle, and the three ways a command's
 * channel is used (collected, piped, tunnelled) are here; what a failure means (its code, message and fix) stays with
 * each side, so this module rejects with ssh2's own errors.
 *
 * The only module that imports ssh2 (container/ssh-keys.ts makes and checks keys through it too); loaded by those
 * that need it, themselves loaded with `await import()` where ssh may not be needed. ssh2 is CommonJS:
 * named imports crash under Node, so take the default export apart.
 */
import {createHash} from 'node:crypto'
import type {Duplex, Readable, Writable} from 'node:stream'

import ssh2 from 'ssh2'
import type {AgentAuthMethod, ClientChannel, Client as ClientType, ConnectConfig, PseudoTtyOptions, PublicKeyAuthMethod} from 'ssh2'

import {ContainerError} from './errors.js'

const {Client, utils} = ssh2

export type SshClient = ClientType
export type SshAuthMethod = AgentAuthMethod | PublicKeyAuthMethod

/** A keepalive every 15 s, both sides: a session left open across a quiet hour is not dropped by a NAT. */
export const SSH_KEEPALIVE_MS = 15_000

export type SshConnectConfig = {
  readonly host: string
  readonly port: number
  readonly username: string
  /** a key of ours, or (the box) the agent and the key files, tried in order */
  readonly auth: {readonly privateKey: string | Buffer} | {readonly methods: readonly SshAuthMethod[]}
  /** a stream to sshd opened already (a tunnel, a jump host's forward) instead of a TCP connection */
  readonly sock?: Duplex
  readonly readyTimeoutMs: number
  /** keepalives missed before the connection counts as dead; absent: ssh2's default (3) */
  readonly keepaliveCountMax?: number
  /** ask sshd for this host-key type only (a pinned key's, or sshd may present another of its keys) */
  readonly hostKeyType?: string
  /** whether the host key sshd presents (its wire-format blob) is trusted */
  readonly verifyHostKey: (key: Buffer) => boolean
  /** an error of the connection after login (a reset): for the caller's debug log; the channels see it close */
  readonly onLateError?: (error: Error) => void
}

/** A logged-in connection and the host key it presented ("ssh-ed25519 AAAA..."). */
export type SshConnected = {readonly client: SshClient; readonly hostKey: string}

/** Opens one connection and logs in; rejects with ssh2's error (a refused host key too: the caller's verifier knows). */
export function connectSsh(config: SshConnectConfig): Promise<SshConnected> {
  return new Promise((resolve, reject) => {
    const client = new Client()
    let hostKey = ''
    const options: ConnectConfig = {
      host: config.host,
      port: config.port,
      username: config.username,
      sock: config.sock,
      readyTimeout: config.readyTimeoutMs,
      keepaliveInterval: SSH_KEEPALIVE_MS,
      ...(config.keepaliveCountMax !== undefined ? {keepaliveCountMax: config.keepaliveCountMax} : {}),
      ...('privateKey' in config.auth ? {privateKey: config.auth.privateKey} : {authHandler: [...config.auth.methods]}),
      ...(config.hostKeyType ? {algorithms: {serverHostKey: [config.hostKeyType as never]}} : {}),
      hostVerifier: (key: Buffer) => {
        hostKey = publicKeyLine(key)
        return config.verifyHostKey(key)
      },
    }
    let settled = false
    client
      .once('ready', () => {
        settled = true
        resolve({client, hostKey})
      })
      // 'on', not 'once': a reset connection can emit a second error, which would otherwise be thrown
      .on('error', (error) => {
        if (settled) return config.onLateError?.(error)
        settled = true
        client.end()
        reject(error)
      })
      .connect(options)
    // ssh2 leaves Nagle on: the userauth service request then waits out sshd's delayed ACK (~40 ms of a ~80 ms login)
    client.setNoDelay(true)
  })
}

/** What a command without a pty left: its output as text, its exit code (null: none came) and the signal that ended it. */
export type SshCollected = {readonly stdout: string; readonly stderr: string; readonly exitCode: number | null; readonly signal: string | null}

export type CollectOptions = {
  /** keep only the first this many bytes of each stream (the rest is read and dropped); absent: all */
  readonly keepBytes?: number
  /** stderr goes here as it comes instead of being kept */
  readonly onStderr?: (chunk: Buffer) => void
  /** called as soon as the channel is open, its listeners set: the caller's stdin goes in here */
  readonly onOpen: (channel: ClientChannel) => void
  /** closes the channel and rejects with `timedOut()` when the command has not ended by then */
  readonly timeout?: {readonly ms: number; readonly timedOut: () => Error}
}

/** Runs a command without a pty and collects what it prints; rejects with ssh2's error when the channel is refused. */
export function collectSsh(client: SshClient, command: string, options: CollectOptions): Promise<SshCollected> {
  return new Promise((resolve, reject) => {
    client.exec(command, (error, channel) => {
      if (error) return reject(error)
      const stdout: Buffer[] = []
      const stderr: Buffer[] = []
      let exitCode: number | null = null
      let signal: string | null = null
      if (options.timeout) {
        const {ms, timedOut} = options.timeout
        const timer = setTimeout(() => {
          channel.close()
          reject(timedOut())
        }, ms)
        channel.on('close', () => clearTimeout(timer))
      }
      channel.on('data', keep(stdout, options.keepBytes))
      channel.stderr.on('data', options.onStderr ?? keep(stderr, options.keepBytes))
      channel.on('exit', (code: number | null, signalName?: string) => {
        exitCode = code
        signal = signalName ?? null
      })
      channel.on('close', () => resolve({stdout: Buffer.concat(stdout).toString('utf8'), stderr: Buffer.concat(stderr).toString('utf8'), exitCode, signal}))
      options.onOpen(channel)
    })
  })
}

export type PipeIo = {
  /** piped into the command until it ends; absent: the command's stdin is closed at once */
  readonly stdin?: Readable
  readonly stdout: Writable
  readonly stderr: Writable
  /** a pty (stderr then arrives merged into stdout, as with ssh -t) */
  readonly pty?: PseudoTtyOptions
}

/** A command whose streams are piped both ways, once its channel is open. */
export type PipedCommand = {
  /** the exit code as a shell reports it: 128+n for a signal, -1 when neither came */
  readonly done: Promise<number>
  resize(rows: number, cols: number): void
}

/** Runs a command (null: a login shell, which needs a pty) with its streams piped; rejects with ssh2's error. */
export function pipeSsh(client: SshClient, command: string | null, io: PipeIo): Promise<PipedCommand> {
  return new Promise((resolve, reject) => {
    const onChannel = (error: Error | undefined, channel: ClientChannel) => {
      if (error) return reject(error)
      let exitCode = -1
      channel.on('exit', (code: number | null, signalName?: string) => {
        exitCode = shellExitCode(code, signalName)
      })
      channel.pipe(io.stdout, {end: false})
      channel.stderr.pipe(io.stderr, {end: false})
      if (io.stdin) io.stdin.pipe(channel)
      else channel.end()
      const done = new Promise<number>((resolveDone) =>
        channel.on('close', () => {
          io.stdin?.unpipe(channel)
          resolveDone(exitCode)
        }),
      )
      resolve({done, resize: (rows, cols) => channel.setWindow(rows, cols, 0, 0)})
    }
    if (command === null) client.shell(io.pty ?? {}, onChannel)
    else if (io.pty) client.exec(command, {pty: io.pty}, onChannel)
    else client.exec(command, onChannel)
  })
}

/** A TCP stream from the far side to host:port there (direct-tcpip, as ssh -W or ProxyJump use); ssh2's error else. */
export function forwardSsh(client: SshClient, host: string, port: number): Promise<Duplex> {
  return new Promise((resolve, reject) => client.forwardOut('127.0.0.1', 0, host, port, (error, stream) => (error ? reject(error) : resolve(stream))))
}

/** the key type inside an ssh wire-format public key blob ("ssh-ed25519", ...) */
export function keyTypeOf(blob: Buffer): string {
  if (blob.length < 4) return ''
  const length = blob.readUInt32BE(0)
  return blob.subarray(4, 4 + length).toString('latin1')
}

/** The public key line ("ssh-ed25519 AAAA...") of a key blob as sshd sends it. */
export function publicKeyLine(blob: Buffer): string {
  return `${keyTypeOf(blob)} ${blob.toString('base64')}`
}

/** Whether ssh2 can use a private key as it is: one key, readable, without a passphrase. */
export function isUsableWithoutPassphrase(key: string | Buffer): boolean {
  const parsed = utils.parseKey(key)
  return !(parsed instanceof Error) && !Array.isArray(parsed)
}

/** A new ed25519 pair: OpenSSH private key text (unencrypted) and the public key line. */
export function newEd25519Pair(comment: string): {privateKey: string; publicKey: string} {
  const pair = utils.generateKeyPairSync('ed25519', {comment})
  return {privateKey: pair.private, publicKey: pair.public.trim()}
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

/** A data listener that keeps the first `limit` bytes of a stream (all without one) and drops the rest. */
function keep(into: Buffer[], limit = Infinity): (chunk: Buffer) => void {
  let kept = 0
  return (chunk) => {
    if (kept >= limit) return
    const part = chunk.length <= limit - kept ? chunk : Buffer.from(chunk.subarray(0, limit - kept))
    into.push(part)
    kept += part.length
  }
}
