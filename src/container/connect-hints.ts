import {ContainerError} from '../core/errors.js'
import {shellQuote} from '../core/shell-words.js'
import type {SessionContainer} from './session-container.js'

/** How a user reaches a session: our command, a plain ssh line, and a Host entry for ~/.ssh/config (VS Code Remote-SSH). */
export type ConnectHints = {
  readonly command: string
  /** null when the image has no sshd (sessions go through docker exec) */
  readonly ssh: string | null
  readonly sshConfig: string | null
}

/** The Host name of a session on this machine, also the HostKeyAlias its pinned host key is filed under. */
export function sessionAlias(session: string): string {
  return `gpu-cosplay-${session}`
}

/** `knownHostsFile`: where the session's host key is pinned (knownHostsLine); required when the session has sshd. */
export function connectHints(c: SessionContainer, keyPath: string, knownHostsFile: string | null): ConnectHints {
  if (c.sshPort === null || c.sshHost === null || knownHostsFile === null) return {command: `gpu-cosplay ssh ${c.session}`, ssh: null, sshConfig: null}
  const alias = sessionAlias(c.session)
  const pinned = ['-o', `HostKeyAlias=${alias}`, '-o', `UserKnownHostsFile=${knownHostsFile}`, '-o', 'StrictHostKeyChecking=yes']
  return {
    command: `gpu-cosplay ssh ${c.session}`,
    ssh: ['ssh', ...pinned, '-p', String(c.sshPort), '-i', keyPath, `${c.user}@${c.sshHost}`].map((word) => shellQuote(word)).join(' '),
    sshConfig: sshConfigEntry(c, keyPath, knownHostsFile),
  }
}

/**
 * The Host entry for a session's sshd on this machine. Its host key is pinned in a known_hosts file of its own,
 * filed under the alias: the port is reused by later sessions, whose containers have host keys of their own.
 */
export function sshConfigEntry(c: SessionContainer, keyPath: string, knownHostsFile: string): string {
  if (c.sshPort === null || c.sshHost === null) throw new ContainerError('NO_SSHD', `session "${c.session}" runs an image without sshd`)
  return pinnedEntry({
    alias: sessionAlias(c.session),
    hostName: c.sshHost,
    port: c.sshPort,
    user: c.user,
    identityFile: keyPath,
    knownHostsFile,
    proxyJump: null,
  })
}

/** A session on a GPU box, reached from another machine through the box (ProxyJump), its host key pinned. */
export type JumpEntry = {
  /** the Host name, also the HostKeyAlias the pinned key is filed under */
  readonly alias: string
  /** sshd's address and port as the box sees them (its loopback) */
  readonly hostName: string
  readonly port: number
  readonly user: string
  readonly identityFile: string
  /** the box, as OpenSSH's ProxyJump takes it: [user@]host[:port] or an ssh_config alias; null: a session on this machine */
  readonly proxyJump: string | null
  readonly knownHostsFile: string
}

export function sshConfigEntryViaJump(e: JumpEntry): string {
  return pinnedEntry(e)
}

function pinnedEntry(e: Omit<JumpEntry, 'proxyJump'> & {readonly proxyJump: string | null}): string {
  return [
    `Host ${e.alias}`,
    `  HostName ${e.hostName}`,
    `  Port ${e.port}`,
    `  User ${e.user}`,
    ...(e.proxyJump === null ? [] : [`  ProxyJump ${e.proxyJump}`]),
    `  IdentityFile ${configPath(e.identityFile)}`,
    '  IdentitiesOnly yes',
    // the port gets reused: the key is filed under the alias, in a file of its own
    `  HostKeyAlias ${e.alias}`,
    `  UserKnownHostsFile ${configPath(e.knownHostsFile)}`,
    '  StrictHostKeyChecking yes',
    '  LogLevel ERROR',
  ].join('\n')
}

/** The known_hosts line that pins a session's host key under its alias. */
export function knownHostsLine(alias: string, hostKey: string): string {
  return `${alias} ${hostKey.trim().split(/\s+/).slice(0, 2).join(' ')}`
}

/** A path for ssh_config: `%` is ssh's token character in IdentityFile and UserKnownHostsFile, and spaces need quotes. */
export function configPath(path: string): string {
  if (path.includes('"')) throw new ContainerError('BAD_PATH', `ssh_config cannot hold a path with a double quote: ${path}`)
  const escaped = path.replace(/%/g, '%%')
  return /\s/.test(escaped) ? `"${escaped}"` : escaped
}

/** One authorized_keys or host key line of a type the entrypoint accepts ("ssh-ed25519 AAAA... comment"), nothing around it. */
export function isPublicKeyLine(line: string): boolean {
  return /^(ssh-|ecdsa-|sk-)[A-Za-z0-9@.-]+ [A-Za-z0-9+/]+=*( [^\n\r]*)?$/.test(line)
}
