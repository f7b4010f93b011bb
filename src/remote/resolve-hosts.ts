import {type HostAddress, isBareHostName, parseHostUrl} from './host-url.js'
import type {HostsFile} from './hosts-file.js'
import {RemoteError} from './remote-error.js'

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
  return entries.map((entry) => {
    if (entry.startsWith('ssh://')) return parseHostUrl(entry)
    if (entry.includes('@')) return parseHostUrl(`ssh://${entry}`, entry)
    if (!isBareHostName(entry)) {
      throw new RemoteError('BAD_HOST', `"${entry}" is neither ssh://[user@]host[:port] nor a host name`, {exit: 2})
    }
    const named = hostsFile().hosts[entry]
    return named ? parseHostUrl(named.url, entry) : {label: entry, host: entry, user: null, port: null}
  })
}
