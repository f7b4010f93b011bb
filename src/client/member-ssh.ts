/**
 * `ssh` by a member of a shared box: the engine says where their session's sshd is (and which host key `up` pinned),
 * and this process logs in as the member, with the member's own key. A key the container does not know yet (made
 * after `up`) is authorised by the engine first.
 */
import {homedir} from 'node:os'
import {join} from 'node:path'

import type {SshSession} from '../container/ssh-client.js'
import {isCosplayError} from '../core/errors.js'
import {loadOrCreateClientKey} from '../remote/client-key.js'
import {askEngine, memberOfBox} from '../system/engine-client.js'
import type {SessionReach} from './session-access.js'

/** null: the session's image has no sshd (go through exec) */
export async function loginAsMember(name: string | null): Promise<{session: string; ssh: SshSession} | null> {
  const box = memberOfBox()
  if (box === null) throw new Error('loginAsMember: not a member of an installed box')
  const reach = (await askEngine(box, {op: 'session', name}, {progress: null, cancellable: false})) as SessionReach
  if (reach.sshPort === null || reach.sshHost === null) return null
  const key = loadOrCreateClientKey(join(homedir(), '.ssh'))
  const {SshSession: Ssh} = await import('../container/ssh-client.js')
  const target = {
    host: reach.sshHost,
    port: reach.sshPort,
    username: reach.user,
    privateKey: key.privateKey,
    ...(reach.hostKey ? {hostKey: reach.hostKey} : {}),
  }
  try {
    return {session: reach.session, ssh: await Ssh.connectWithRetry(target, {timeoutMs: 5_000})}
  } catch (error) {
    if (!isCosplayError(error) || error.code !== 'SSH_AUTH_FAILED') throw error
  }
  await askEngine(box, {op: 'authorize-key', name: reach.session, publicKey: key.publicKey}, {progress: null, cancellable: false})
  return {session: reach.session, ssh: await Ssh.connectWithRetry(target, {timeoutMs: 10_000})}
}
