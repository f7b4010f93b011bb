/**
 * ssh2 to a GPU box, as `ssh -o BatchMode=yes` would connect: ~/.ssh/config (HostName, User, Port,
 * IdentityFile, ProxyJump with one hop, UserKnownHostsFile), the agent at SSH_AUTH_SOCK, then the key files;
 * host keys must already be in known_hosts. Loaded with `await import()` only when --host is given. The connection
 * itself is core/ssh-connection.ts's, the one ssh2 client (a session's container is reached through it too).
 */
import {readFileSync} from 'node:fs'
import {userInfo} from 'node:os'
import {join} from 'node:path'
import type {Duplex, Readable, Writable} from 'node:stream'

import createDebug from 'debug'

import {
  collectSsh,
  connectSsh,
  forwardSsh,
  isUsableWithoutPassphrase,
  type PipedCommand,
  pipeSsh,
  type SshAuthMethod,
  type SshClient,
} from '../core/ssh-connection.js'
import {type HostAddress, parseHostUrl} from './host-url.js'
import {checkHostKey, type HostKeyVerdict, knownHostsName, readKnownHosts} from './known-hosts.js'
import {RemoteError} from './remote-error.js'
import {sshConfigFor} from './ssh-config-file.js'

const debug = createDebug('gpu-cosplay:remote')

/** Everything needed to open one connection, after ~/.ssh/config is applied. */
export type SshEndpoint = {
  readonly label: string
  /** the name known_hosts is checked under (HostName when ssh_config gives one, as ssh does) */
  readonly host: string
  readonly port: number
  readonly user: string
  readonly identityFiles: readonly string[]
  readonly knownHostsFiles: readonly string[]
  readonly jump: SshEndpoint | null
}

export type EndpointEnv = {env: NodeJS.ProcessEnv; home: string; sshConfigText: string}

const DEFAULT_KEYS = ['id_ed25519', 'id_ecdsa', 'id_rsa']

/** The URL or alias with ~/.ssh/config applied: the URL's own user and port win over the file's, as on ssh's command line. */
export function endpointFor(address: HostAddress, context: EndpointEnv, depth = 0): SshEndpoint {
  const config = sshConfigFor(context.sshConfigText, address.host, context.home)
  let jump: SshEndpoint | null = null
  if (config.proxyJump !== null) {
    if (depth > 0 || config.proxyJump.includes(',')) {
      throw new RemoteError('REMOTE_PROXY_JUMP', `ProxyJump ${config.proxyJump} for ${address.label}: only one jump host is supported`, {exit: 2})
    }
    const proxyJump = config.proxyJump
    let hop: HostAddress
    try {
      // the same syntax as --host, IPv6 in brackets included (proxyJumpFor writes [v6]:port)
      hop = parseHostUrl(proxyJump.startsWith('ssh://') ? proxyJump : `ssh://${proxyJump}`, proxyJump)
    } catch (error) {
      throw new RemoteError('REMOTE_PROXY_JUMP', `ProxyJump "${proxyJump}" for ${address.label} is not [user@]host[:port]`, {exit: 2, cause: error})
    }
    jump = endpointFor(hop, context, depth + 1)
  }
  const identityFiles = config.identityFiles.length > 0 ? config.identityFiles : DEFAULT_KEYS.map((name) => join(context.home, '.ssh', name))
  const knownHostsFiles =
    config.userKnownHostsFiles.length > 0 ? config.userKnownHostsFiles : [join(context.home, '.ssh', 'known_hosts'), join(context.home, '.ssh', 'known_hosts2')]
  return {
    label: address.label,
    host: config.hostName ?? address.host,
    port: address.port ?? config.port ?? 22,
    user: address.user ?? config.user ?? context.env.USER ?? userInfo().username,
    identityFiles,
    knownHostsFiles,
    jump,
  }
}

/** a remote gpu-cosplay's answer: its stdout (stderr was streamed as it came), exit code (null: none came) and signal */
export type RemoteExecResult = {readonly stdout: string; readonly exitCode: number | null; readonly signal: string | null}

export type RunningCommand = {
  readonly done: Promise<RemoteExecResult>
  /** closes the command's stdin: the remote gpu-cosplay takes that EOF as Ctrl-C */
  endInput(): void
}

export type ExecIo = {
  onStderr?: (chunk: Buffer) => void
  /** piped to the command's stdin; without it stdin stays open until endInput() or the connection closes */
  stdin?: Readable
}

export type StreamIo = {
  stdin: Readable
  stdout: Writable
  stderr: Writable
  /** a pty on the box (stderr then arrives merged into stdout, as with ssh -t) */
  pty?: {rows: number; cols: number; term: string}
}

export type StreamingCommand = {
  /** the remote exit code, 128+n for a signal (as a shell reports it) */
  readonly done: Promise<number>
  resize(rows: number, cols: number): void
}

export class SshTransport {
  private constructor(
    private readonly client: SshClient,
    private readonly jumpClient: SshClient | null,
    readonly endpoint: SshEndpoint,
  ) {}

  static async connect(endpoint: SshEndpoint, env: NodeJS.ProcessEnv, timeoutMs = 20_000): Promise<SshTransport> {
    let jumpClient: SshClient | null = null
    let sock: Duplex | undefined
    if (endpoint.jump) {
      jumpClient = await openClient(endpoint.jump, env, timeoutMs, undefined)
      const jumpVia = jumpClient
      sock = await forwardSsh(jumpVia, endpoint.host, endpoint.port).catch((error: Error) => {
        jumpVia.end()
        throw new RemoteError('REMOTE_UNREACHABLE', `${endpoint.jump?.label} cannot reach ${endpoint.host}:${endpoint.port}: ${error.message}`, {
          cause: error,
        })
      })
    }
    const client = await openClient(endpoint, env, timeoutMs, sock).catch((error) => {
      jumpClient?.end()
      throw error
    })
    return new SshTransport(client, jumpClient, endpoint)
  }

  /** Runs one command line (already quoted for the remote POSIX shell); stdout is collected, stderr streamed. */
  exec(command: string, io: ExecIo = {}): RunningCommand {
    // a Ctrl-C may come before the channel opens: remember it, and close the channel's stdin once it does
    let ended = false
    let channelOpened: {end(): void} | null = null
    debug('exec on %s: %s', this.endpoint.label, command)
    const done = collectSsh(this.client, command, {
      onStderr: (chunk) => io.onStderr?.(chunk),
      onOpen: (channel) => {
        channelOpened = channel
        if (ended) channel.end()
        else if (io.stdin) io.stdin.pipe(channel)
      },
    }).then(
      ({stdout, exitCode, signal}): RemoteExecResult => ({stdout, exitCode, signal}),
      (error: Error) => {
        throw this.refused(error)
      },
    )
    return {
      done,
      endInput: () => {
        ended = true
        channelOpened?.end()
      },
    }
  }

  /**
   * Runs one command line with stdin, stdout and stderr streamed both ways, as `ssh box CMD` does; stdin's end
   * closes the command's stdin.
   */
  stream(command: string, io: StreamIo): StreamingCommand {
    let piped: PipedCommand | null = null
    debug('stream on %s: %s', this.endpoint.label, command)
    const done = pipeSsh(this.client, command, io).then(
      (opened) => {
        piped = opened
        return opened.done
      },
      (error: Error) => {
        throw this.refused(error)
      },
    )
    return {done, resize: (rows, cols) => piped?.resize(rows, cols)}
  }

  /** A TCP stream from the box to host:port on its side (direct-tcpip, as ssh -W or ProxyJump use). */
  tunnel(host: string, port: number): Promise<Duplex> {
    return forwardSsh(this.client, host, port).catch((error: Error) => {
      throw new RemoteError('REMOTE_TUNNEL_FAILED', `${this.endpoint.label} cannot open a tunnel to ${host}:${port} on its side: ${error.message}`, {
        fix: ["the box's sshd must allow TCP forwarding (AllowTcpForwarding yes, its default)"],
        cause: error,
      })
    })
  }

  close(): void {
    this.client.end()
    this.jumpClient?.end()
  }

  private refused(error: Error): RemoteError {
    return new RemoteError('REMOTE_EXEC_FAILED', `${this.endpoint.label} refused to run a command: ${error.message}`, {cause: error})
  }
}

async function openClient(endpoint: SshEndpoint, env: NodeJS.ProcessEnv, timeoutMs: number, sock: Duplex | undefined): Promise<SshClient> {
  const auth = authMethods(endpoint, env)
  if (auth.length === 0) {
    throw new RemoteError(
      'REMOTE_NO_CREDENTIALS',
      `no ssh agent (SSH_AUTH_SOCK) and no readable unencrypted key for ${endpoint.user}@${endpoint.host}:${endpoint.port}`,
      {
        fix: ['start ssh-agent and ssh-add your key, or set IdentityFile in ~/.ssh/config'],
      },
    )
  }
  const knownHosts = readKnownHosts(endpoint.knownHostsFiles)
  let verdict: HostKeyVerdict | null = null
  try {
    const {client} = await connectSsh({
      host: endpoint.host,
      port: endpoint.port,
      username: endpoint.user,
      auth: {methods: auth},
      sock,
      readyTimeoutMs: timeoutMs,
      keepaliveCountMax: 4,
      onLateError: (error) => debug('connection to %s: %s', endpoint.label, error.message),
      verifyHostKey: (key) => {
        verdict = checkHostKey(knownHosts, endpoint.host, endpoint.port, key)
        debug('host key of %s: %s', endpoint.label, verdict)
        return verdict === 'trusted'
      },
    })
    return client
  } catch (error) {
    throw connectError(endpoint, error as Error & {level?: string; code?: string}, verdict)
  }
}

function authMethods(endpoint: SshEndpoint, env: NodeJS.ProcessEnv): SshAuthMethod[] {
  const methods: SshAuthMethod[] = []
  if (env.SSH_AUTH_SOCK) methods.push({type: 'agent', username: endpoint.user, agent: env.SSH_AUTH_SOCK})
  for (const path of endpoint.identityFiles) {
    let key: Buffer
    try {
      key = readFileSync(path)
    } catch {
      continue
    }
    // BatchMode: a key with a passphrase is only usable through the agent
    if (!isUsableWithoutPassphrase(key)) {
      debug('skipping %s: unreadable or passphrase-protected', path)
      continue
    }
    methods.push({type: 'publickey', username: endpoint.user, key})
  }
  return methods
}

function connectError(endpoint: SshEndpoint, error: Error & {level?: string; code?: string}, verdict: HostKeyVerdict | null): RemoteError {
  const where = `${endpoint.user}@${endpoint.host}:${endpoint.port}`
  const name = knownHostsName(endpoint.host, endpoint.port)
  const scan = `ssh-keyscan -p ${endpoint.port} ${endpoint.host} (check the fingerprint) >> ~/.ssh/known_hosts, or ssh -p ${endpoint.port} ${endpoint.user}@${endpoint.host} once`
  if (verdict === 'unknown') {
    return new RemoteError('REMOTE_HOST_KEY_UNKNOWN', `the host key of ${name} is not in known_hosts (no prompt is shown in batch mode)`, {
      fix: [scan],
      cause: error,
    })
  }
  if (verdict === 'changed' || verdict === 'revoked') {
    return new RemoteError('REMOTE_HOST_KEY_CHANGED', `the host key of ${name} does not match known_hosts (${verdict}): refusing to connect`, {
      fix: [`if the box was reinstalled: ssh-keygen -R '${name}', then add its new key`],
      cause: error,
    })
  }
  if (error.level === 'client-authentication') {
    return new RemoteError('REMOTE_AUTH_FAILED', `${where} refused every key offered (agent and key files)`, {
      fix: ['check that your public key is in ~/.ssh/authorized_keys on the box, or set IdentityFile in ~/.ssh/config'],
      cause: error,
    })
  }
  return new RemoteError('REMOTE_UNREACHABLE', `cannot reach ${where}: ${error.message}`, {
    fix: ['check the address and port, and that sshd runs on the box'],
    cause: error,
  })
}
