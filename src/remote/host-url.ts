import {RemoteError} from './remote-error.js'

/** Where to run: what the user typed (`ssh://user@box:2222`, or a name from ssh_config / hosts.yaml) taken apart. */
export type HostAddress = {
  /** as typed or named, for messages and the HOST column */
  readonly label: string
  /** a host name, an address, or an ssh_config alias */
  readonly host: string
  readonly user: string | null
  readonly port: number | null
}

const BARE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/

/** `ssh://[user@]host[:port]` (IPv6 in brackets); anything else is one clear INPUT error. */
export function parseHostUrl(text: string, label = text): HostAddress {
  const match = /^ssh:\/\/(?:([^@/:\s]+)@)?(\[[0-9A-Fa-f:.]+\]|[^@/:\s[\]]+)(?::(\d+))?\/?$/.exec(text)
  if (!match) {
    throw new RemoteError('BAD_HOST', `"${text}" is not an ssh host: expected ssh://[user@]host[:port] or a name from hosts.yaml`, {
      exit: 2,
      fix: ['e.g. --host ssh://alice@gpu-box or --host ssh://alice@10.0.0.5:2222'],
    })
  }
  const [, user, rawHost, rawPort] = match
  const port = rawPort === undefined ? null : Number(rawPort)
  if (port !== null && (port < 1 || port > 65535)) {
    throw new RemoteError('BAD_HOST', `port ${rawPort} in "${text}" is outside 1-65535`, {exit: 2})
  }
  return {label, host: rawHost.replace(/^\[(.*)\]$/, '$1'), user: user ?? null, port}
}

/** A bare word that may be a hosts.yaml name or an ssh_config alias. */
export function isBareHostName(text: string): boolean {
  return BARE_NAME.test(text)
}

/**
 * The box as OpenSSH's ProxyJump takes it, as the user named it: an ssh_config alias stays an alias (ssh applies
 * its HostName, User, Port and own ProxyJump), a URL or hosts.yaml entry becomes [user@]host[:port].
 */
export function proxyJumpFor(address: HostAddress): string {
  const host = address.host.includes(':') ? `[${address.host}]` : address.host
  return `${address.user === null ? '' : `${address.user}@`}${host}${address.port === null ? '' : `:${address.port}`}`
}

/** The box in a Host name or a file name: its host (alias, name or address) and any explicit port. */
export function hostSlug(address: HostAddress): string {
  return `${address.host}${address.port === null ? '' : `-${address.port}`}`.replace(/[^A-Za-z0-9._-]/g, '_')
}
