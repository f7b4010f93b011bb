/**
 * `ssh-config` for a session of this box: the Host entry, with the host key `up` recorded pinned. What it answers is
 * also what a --host box and a shared box's engine answer (session-on-host.ts): one result type for all three.
 */
import {homedir} from 'node:os'
import {join} from 'node:path'

import type {CallContext} from '../core/call-context.js'
import {ContainerError} from '../core/errors.js'

export type SshConfigResult = {
  session: string
  host: string
  hostName: string
  port: number
  user: string
  identityFile: string
  /** the container's ssh host key, pinned in knownHostsFile */
  hostKey: string | null
  /** the GPU box the entry jumps through (with --host) */
  proxyJump: string | null
  knownHostsFile: string | null
  entry: string
  /** with --install: where the entry was written; null without */
  installed: {entryFile: string; configFile: string; includeAdded: boolean} | null
}

/** A session of this box: its sshd, the host key up recorded (or, asked by a client, the one it presents after authorising the key). */
export async function sshConfigHere(call: CallContext, name: string | undefined, install: boolean, authorizeKey: string | undefined): Promise<SshConfigResult> {
  const [{accessSession, assertPublicKeyLine, authorizeKeyInSession, identityFor, sessionHostKey}, {sessionAlias, sshConfigEntry}, {writeSessionKnownHosts}] =
    await Promise.all([import('./session-access.js'), import('../container/connect-hints.js'), import('./session-known-hosts.js')])
  const access = accessSession(call, name)
  const c = access.container
  if (c.sshPort === null || c.sshHost === null) {
    throw new ContainerError('NO_SSHD', `session "${c.session}" runs an image without sshd`, {
      fix: [`use gpu-cosplay ssh ${c.session} or gpu-cosplay exec ${c.session} -- CMD`],
    })
  }
  // a bad key is refused before a key pair is made for this session
  if (authorizeKey !== undefined) assertPublicKeyLine(authorizeKey)
  const identity = await identityFor(access)
  const hostKey = authorizeKey === undefined ? await sessionHostKey(access, identity) : (await authorizeKeyInSession(access, authorizeKey, identity)).hostKey
  const host = sessionAlias(c.session)
  const sshDir = join(homedir(), '.ssh')
  // asked by a client (--host, or a member of this box): it pins the key on its side; nothing is written here
  const asked = authorizeKey !== undefined
  const knownHostsFile = asked ? null : writeSessionKnownHosts(sshDir, host, hostKey)
  const entry = knownHostsFile === null ? '' : sshConfigEntry(c, identity.privateKeyPath, knownHostsFile)
  let installed: SshConfigResult['installed'] = null
  if (install && !asked) {
    const {installSshConfig} = await import('./install-ssh-config.js')
    installed = installSshConfig(sshDir, c.session, entry)
  }
  return {
    session: c.session,
    host,
    hostName: c.sshHost,
    port: c.sshPort,
    user: c.user,
    identityFile: asked ? '' : identity.privateKeyPath,
    hostKey,
    proxyJump: null,
    knownHostsFile,
    entry,
    installed,
  }
}
