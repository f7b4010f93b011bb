/**
 * ssh, exec and ssh-config with --host: the session lives on a GPU box, its sshd on the box's loopback.
 * The box (its own gpu-cosplay, asked through `ssh-config --authorize-key`) adds this machine's client key to
 * the container's authorized_keys and names its sshd and the host key it presented; this machine then logs in
 * through a direct-tcpip tunnel of the box's ssh connection with that key pinned. docker exec exists only on
 * the box: exec (and ssh to an image without sshd) runs gpu-cosplay there, its stdio streamed both ways.
 */
import {homedir} from 'node:os'
import {join} from 'node:path'

import {isPublicKeyLine, sshConfigEntryViaJump} from '../container/connect-hints.js'
import {SshSession} from '../container/ssh-client.js'
import {type ClientKey, loadOrCreateClientKey} from '../remote/client-key.js'
import {hostSlug, proxyJumpFor} from '../remote/host-url.js'
import {remoteCommandLine} from '../remote/remote-command-line.js'
import {RemoteError} from '../remote/remote-error.js'
import {runRemote} from '../remote/run-remote.js'
import type {BoxConfig} from '../core/box-config.js'
import {askEngine} from '../system/engine-client.js'
import type {SshTransport} from '../remote/ssh-transport.js'
import type {SshConfigResult} from './session-ssh-config.js'
import {withHost} from './forward-to-host.js'
import {writeSessionKnownHosts} from './session-known-hosts.js'
import {runOverSsh, streamOnHost} from './terminal-io.js'

/** How to reach a session's sshd from the box, with the host key it presented there. */
export type SessionSshd = {session: string; hostName: string; port: number; user: string; hostKey: string}

type OnHostRequest = {spec: string; version: string; name: string | undefined}

/** The session's sshd on the box, this machine's key authorised there (an image without sshd: the box's NO_SSHD). */
export async function sessionSshd(transport: SshTransport, name: string | undefined, key: ClientKey, version: string): Promise<SessionSshd> {
  const {payload} = await runRemote(transport, authorizeArgv(name, key), version, {
    onStderr: (chunk) => process.stderr.write(chunk),
  })
  return sshdFromAnswer(payload, transport.endpoint.label)
}

/** What a client asks a box (or this box's engine) for: the session's sshd, with its key authorised there. */
export function authorizeArgv(name: string | undefined, key: ClientKey): string[] {
  return ['ssh-config', '--json', '--authorize-key', key.publicKey, ...(name === undefined ? [] : [name])]
}

/** The answer to authorizeArgv, taken only if it looks like a session of ours: its words become ssh_config lines. */
export function sshdFromAnswer(payload: unknown, label: string): SessionSshd {
  const r = payload as Partial<SshConfigResult>
  const word = (value: unknown): value is string => typeof value === 'string' && /^[A-Za-z0-9_][A-Za-z0-9_.:-]*$/.test(value)
  const isPort = typeof r.port === 'number' && Number.isInteger(r.port) && r.port > 0 && r.port < 65536
  if (!word(r.session) || !word(r.hostName) || !isPort || !word(r.user) || typeof r.hostKey !== 'string' || !isPublicKeyLine(r.hostKey)) {
    throw new RemoteError('REMOTE_COMMAND_FAILED', `gpu-cosplay ssh-config on ${label} answered without the session's sshd and host key`, {
      fix: [`gpu-cosplay remote install --host ${label}`],
    })
  }
  return {session: r.session, hostName: r.hostName, port: r.port!, user: r.user, hostKey: r.hostKey}
}

function loginThroughBox(transport: SshTransport, sshd: SessionSshd, key: ClientKey): Promise<SshSession> {
  return SshSession.connectWithRetry(
    {
      host: sshd.hostName,
      port: sshd.port,
      username: sshd.user,
      privateKey: key.privateKey,
      hostKey: sshd.hostKey,
      via: () => transport.tunnel(sshd.hostName, sshd.port),
    },
    {timeoutMs: 10_000},
  )
}

/** `ssh NAME --host box [-- cmd]`: through the box to the container's sshd, else (no sshd) `gpu-cosplay ssh` on the box. */
export function sshOnHost(
  request: OnHostRequest & {command: readonly string[]; tty: boolean},
): Promise<{session: string; via: 'ssh' | 'exec'; exitCode: number}> {
  return withHost({...request, commandId: 'ssh'}, async (transport) => {
    const key = loadOrCreateClientKey(join(homedir(), '.ssh'))
    const sshd = await sessionSshd(transport, request.name, key, request.version).catch((error: unknown) => {
      if (error instanceof RemoteError && error.code === 'NO_SSHD') return null
      throw error
    })
    if (sshd === null) {
      const argv = ['ssh', ...(request.name === undefined ? [] : [request.name]), ...(request.command.length > 0 ? ['--', ...request.command] : [])]
      const exitCode = await streamOnHost(transport, remoteCommandLine(argv, request.version), request.tty)
      return {session: request.name ?? '', via: 'exec' as const, exitCode}
    }
    const ssh = await loginThroughBox(transport, sshd, key)
    try {
      // as ssh does: the words are joined with spaces and run by the login shell there
      const exitCode = await runOverSsh(ssh, request.command.length === 0 ? null : request.command.join(' '), request.tty)
      return {session: sshd.session, via: 'ssh' as const, exitCode}
    } finally {
      ssh.close()
    }
  })
}

/** `exec NAME --host box -- argv`: `gpu-cosplay exec` on the box, stdio streamed, a pty there when ours is a terminal. */
export function execOnHost(request: OnHostRequest & {command: readonly string[]; tty: boolean}): Promise<number> {
  return withHost({...request, commandId: 'exec'}, (transport) => {
    const argv = ['exec', ...(request.name === undefined ? [] : [request.name]), '--', ...request.command]
    return streamOnHost(transport, remoteCommandLine(argv, request.version), request.tty)
  })
}

/**
 * `ssh-config NAME --host box`: a Host entry that jumps through the box (ProxyJump), with this machine's client
 * key and the container's host key pinned in a known_hosts file of the entry's own (both written here).
 */
export function sshConfigOnHost(request: OnHostRequest & {install: boolean}): Promise<SshConfigResult> {
  return withHost({...request, commandId: 'ssh-config'}, async (transport, host) => {
    const sshDir = join(homedir(), '.ssh')
    const key = loadOrCreateClientKey(sshDir)
    const sshd = await sessionSshd(transport, request.name, key, request.version)
    return pinnedConfig(sshd, {alias: `gpu-cosplay-${hostSlug(host)}-${sshd.session}`, proxyJump: proxyJumpFor(host)}, key, sshDir, request.install)
  })
}

/**
 * Writes the pinned host key (and, with install, the entry) and returns what ssh-config reports: for a box's session
 * (through it, ProxyJump) and for a session of this box's engine alike. The folder is the client key's, made with it.
 */
export async function pinnedConfig(
  sshd: SessionSshd,
  via: {alias: string; proxyJump: string | null},
  key: ClientKey,
  sshDir: string,
  install: boolean,
): Promise<SshConfigResult> {
  const {alias, proxyJump} = via
  const knownHostsFile = writeSessionKnownHosts(sshDir, alias, sshd.hostKey)
  const entry = sshConfigEntryViaJump({
    alias,
    hostName: sshd.hostName,
    port: sshd.port,
    user: sshd.user,
    identityFile: key.privateKeyPath,
    proxyJump,
    knownHostsFile,
  })
  let installed: SshConfigResult['installed'] = null
  if (install) {
    const {installSshConfig} = await import('./install-ssh-config.js')
    installed = installSshConfig(sshDir, alias, entry)
  }
  return {
    session: sshd.session,
    host: alias,
    hostName: sshd.hostName,
    port: sshd.port,
    user: sshd.user,
    identityFile: key.privateKeyPath,
    hostKey: sshd.hostKey,
    proxyJump,
    knownHostsFile,
    entry,
    installed,
  }
}

/**
 * `ssh-config` by a member of a shared box: this box's engine authorises the member's client key in their container
 * and names its sshd and host key (as a --host box does); the entry and the pinned key are written here, as the member.
 * Asked by a --host client (`authorizeKey`: that machine's key), the answer goes back to it and nothing is written here.
 */
export async function sshConfigOnThisBox(
  config: BoxConfig,
  request: {name: string | undefined; install: boolean; authorizeKey?: string},
): Promise<SshConfigResult> {
  const sshDir = join(homedir(), '.ssh')
  const key = request.authorizeKey === undefined ? loadOrCreateClientKey(sshDir) : null
  const answer = await askEngine(
    config,
    {op: 'authorize-key', name: request.name ?? null, publicKey: key?.publicKey ?? request.authorizeKey!},
    {progress: null, cancellable: false},
  )
  const sshd = sshdFromAnswer(answer, 'this box')
  if (key !== null) return pinnedConfig(sshd, {alias: `gpu-cosplay-${sshd.session}`, proxyJump: null}, key, sshDir, request.install)
  const host = `gpu-cosplay-${sshd.session}`
  return {...sshd, host, identityFile: '', proxyJump: null, knownHostsFile: null, entry: '', installed: null}
}
