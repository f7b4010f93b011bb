import {homedir} from 'node:os'

import type {HostAddress} from './host-url.js'
import {hostsFilePath, readHostsFile} from './hosts-file.js'
import {resolveHosts} from './resolve-hosts.js'
import {readSshConfig} from './ssh-config-file.js'
import {endpointFor, SshTransport} from './ssh-transport.js'

/** --host (or GPU_COSPLAY_HOST) as addresses; hosts.yaml is read only when a bare name needs it. */
export function hostsFrom(spec: string, env: NodeJS.ProcessEnv = process.env): HostAddress[] {
  return resolveHosts(spec, () => readHostsFile(hostsFilePath(env, homedir())))
}

export async function openHost(address: HostAddress, env: NodeJS.ProcessEnv = process.env): Promise<SshTransport> {
  const home = homedir()
  return SshTransport.connect(endpointFor(address, {env, home, sshConfigText: readSshConfig(home)}), env)
}
