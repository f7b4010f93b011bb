/**
 * `ssh-config`: a Host entry for a session, by its route: on a --host box (through it, ProxyJump), in this box's
 * engine for a member of a shared box, or here. Each route loads its own client only: ssh2 for a box, dockerode here.
 */
import type {CallContext} from '../core/call-context.js'
import type {SshConfigResult} from './session-ssh-config.js'

export type SshConfigRequest = {
  /** --host: the box the session is on */
  readonly host: string | undefined
  readonly name: string | undefined
  readonly install: boolean
  /** what a --host client sends to the box: its public key, for the container's authorized_keys */
  readonly authorizeKey: string | undefined
  readonly version: string
}

export async function sshConfigFor(call: CallContext, request: SshConfigRequest): Promise<SshConfigResult> {
  const {host, name, install} = request
  if (host?.trim()) return (await import('./session-on-host.js')).sshConfigOnHost({spec: host, name, install, version: request.version})
  const box = (await import('../system/engine-client.js')).memberOfBox()
  if (box) return (await import('./session-on-host.js')).sshConfigOnThisBox(box, {name, install, authorizeKey: request.authorizeKey})
  return (await import('./session-ssh-config.js')).sshConfigHere(call, name, install, request.authorizeKey)
}
