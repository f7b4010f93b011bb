import {ContainerError} from '../core/errors.js'
import type {SessionContainer} from './session-container.js'

/** How a user reaches a session: our command, a plain ssh line, and a Host entry for ~/.ssh/config (VS Code Remote-SSH). */
export type ConnectHints = {
  readonly command: string
  /** null when the image has no sshd (sessions go through docker exec) */
  readonly ssh: string | null
  readonly sshConfig: string | null
}

export function connectHints(c: SessionContainer, keyPath: string): ConnectHints {
  return {
    command: `gpu-cosplay ssh ${c.session}`,
    ssh: c.sshPort === null ? null : `ssh -p ${c.sshPort} -i ${keyPath} ${c.user}@${c.sshHost}`,
    sshConfig: c.sshPort === null ? null : sshConfigEntry(c, keyPath),
  }
}

export function sshConfigEntry(c: SessionContainer, keyPath: string): string {
  // Every container has fresh host keys and ports get reused: pin nothing, the port is bound locally.
  return [
    `Host gpu-cosplay-${c.session}`,
    `  HostName ${c.sshHost}`,
    `  Port ${c.sshPort}`,
    `  User ${c.user}`,
    `  IdentityFile ${keyPath}`,
    '  IdentitiesOnly yes',
    '  StrictHostKeyChecking no',
    '  UserKnownHostsFile /dev/null',
    '  LogLevel ERROR',
  ].join('\n')
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
  return [
    `Host ${e.alias}`,
    `  HostName ${e.hostName}`,
    `  Port ${e.port}`,
    `  User ${e.user}`,
    ...(e.proxyJump === null ? [] : [`  ProxyJump ${e.proxyJump}`]),
    `  IdentityFile ${configPath(e.identityFile)}`,
    '  IdentitiesOnly yes',
    // the port is the box's and gets reused: the key is filed under the alias, in a file of its own
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
