import {type HostAddress, isBareHostName, parseHostUrl} from './host-url.js'
import type {HostsFile} from './hosts-file.js'
import {RemoteError} from './remote-error.js'

/** `--host all`: every box hosts.yaml names, in its order (the name is reserved there) */
export const ALL_HOSTS = 'all'

/**
 * `--host a,b` (or GPU_COSPLAY_HOST when the flag is absent): each entry an ssh:// URL, a hosts.yaml name, or
 * (a bare word hosts.yaml does not know) an ssh_config alias, as `ssh NAME` would take it.
 */
export function resolveHosts(spec: string, hostsFile: () => HostsFile): HostAddress[] {
  const entries = spec
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
  if (entries.length === 0) throw new RemoteError('BAD_HOST', `--host "${spec}" names no host`, {exit: 2})
  return entries.flatMap((entry) => {
    if (entry === ALL_HOSTS) return allNamedHosts(hostsFile())
    if (entry.startsWith('ssh://')) return parseHostUrl(entry)
    if (entry.includes('@')) return parseHostUrl(`ssh://${entry}`, entry)
    if (!isBareHostName(entry)) {
      throw new RemoteError('BAD_HOST', `"${entry}" is neither ssh://[user@]host[:port] nor a host name`, {exit: 2})
    }
    const named = hostsFile().hosts[entry]
    return named ? parseHostUrl(named.url, entry) : {label: entry, host: entry, user: null, port: null}
  })
}

function allNamedHosts(file: HostsFile): HostAddress[] {
  const named = Object.entries(file.hosts)
  if (named.length === 0) {
    throw new RemoteError('BAD_HOST', '--host all: hosts.yaml names no host', {
      exit: 2,
      fix: ['name your boxes in $XDG_CONFIG_HOME/gpu-cosplay/hosts.yaml (version: 1, hosts: {NAME: {url: ssh://user@box}})'],
    })
  }
  return named.map(([name, entry]) => parseHostUrl(entry.url, name))
}
