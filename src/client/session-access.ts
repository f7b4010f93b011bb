/**
 * What the session commands (ssh, exec, verify, report, ssh-config) share: find the session (by name, or the
 * caller's only one) and its container, and run things in it. Loaded lazily: it pulls in dockerode and ssh2.
 */
import {homedir} from 'node:os'
import type {Readable, Writable} from 'node:stream'

import {resolveStateDir} from '../apply/state-dir.js'
import {isPublicKeyLine} from '../container/connect-hints.js'
import type {SessionRecord} from '../apply/gpu-book.js'
import {pickSession} from '../apply/pick-session.js'
import {DockerRuntime} from '../container/runtime.js'
import type {SshSession} from '../container/ssh-client.js'
import {execUserOf, type SessionContainer, sessionContainer} from '../container/session-container.js'
import {readSessionEnvFile} from '../container/session-env-file.js'
import {loadOrCreateSshIdentity, type SshIdentity} from '../container/ssh-keys.js'
import {ContainerError, InputError} from '../core/errors.js'
import type {CallContext} from '../core/call-context.js'
import {sessionEnvFileOf, userDirOf} from '../core/state-layout.js'
import type {RequestIo} from './request-io.js'

export type SessionAccess = {
  /** the session as its book recorded it when it was picked */
  readonly session: SessionRecord
  readonly container: SessionContainer
  readonly stateDir: string
  readonly uid: number
  /** who asked for it */
  readonly call: CallContext
}

/** The session's container; no GPU privileges needed. */
export function accessSession(call: CallContext, name: string | undefined): SessionAccess {
  const stateDir = resolveStateDir(process.env, homedir(), call.policy).dir
  const user = call.caller
  const session = pickSession(stateDir, call.policy, name, {uid: user.uid, isRoot: user.isRoot})
  return {session, container: sessionContainer(session), stateDir, uid: session.owner.uid, call}
}

export function identityFor(access: SessionAccess): Promise<SshIdentity> {
  // the engine logs in with the key up authorised for it (root's, in the caller's folder), never root's own ~/.ssh
  return loadOrCreateSshIdentity({
    userDir: userDirOf(access.stateDir, access.uid),
    trust: access.call.policy,
    ...(access.call.actsForCaller ? {homeDir: null} : {}),
  })
}

/**
 * A login to the session's sshd on this host, as its user, with `identity` (this host's key for the session). The
 * host key `up` recorded is pinned (SSH_HOST_KEY_MISMATCH otherwise): the port is reused once the session ends, and
 * anything listening there must not get the user's commands. Sessions up'd before the pinning have no key to pin.
 */
export async function loginToSession(access: SessionAccess, identity: SshIdentity): Promise<SshSession> {
  const c = access.container
  if (c.sshPort === null || c.sshHost === null) throw new Error(`session ${c.session} publishes no sshd`)
  const {SshSession: Ssh} = await import('../container/ssh-client.js')
  const target = {host: c.sshHost, port: c.sshPort, username: c.user, privateKey: identity.privateKey}
  return Ssh.connectWithRetry(c.hostKey === undefined ? target : {...target, hostKey: c.hostKey}, {timeoutMs: 10_000})
}

/** The session's sshd host key: the one `up` recorded, else (a session up'd before the pinning) what it presents now. */
export async function sessionHostKey(access: SessionAccess, identity: SshIdentity): Promise<string> {
  if (access.container.hostKey !== undefined) return access.container.hostKey
  const ssh = await loginToSession(access, identity)
  ssh.close()
  return ssh.hostKey
}

/** An authorized_keys line of a key type the entrypoint accepts, on one line; anything else is refused before it is sent. */
export function assertPublicKeyLine(line: string): void {
  if (!isPublicKeyLine(line)) {
    throw new InputError('BAD_PUBLIC_KEY', 'not an ssh public key line ("ssh-ed25519 AAAA... comment")')
  }
}

/**
 * For a client on another machine (ssh, exec and ssh-config --host): logs in to the container as the session
 * user, adds the client's public key to its authorized_keys (once), and returns the host key the container
 * presented on that loopback connection, for the client to pin. The container's sshd is reached the way
 * `gpu-cosplay ssh` reaches it here, with this box's `identity`; the private key stays on the client.
 */
export async function authorizeKeyInSession(access: SessionAccess, publicKey: string, identity: SshIdentity): Promise<{hostKey: string}> {
  assertPublicKeyLine(publicKey)
  const c = access.container
  const ssh = await loginToSession(access, identity)
  try {
    // the key arrives on stdin: never part of a command line
    const result = await ssh.exec(
      'umask 077; mkdir -p ~/.ssh && IFS= read -r key && { grep -qxF -e "$key" ~/.ssh/authorized_keys 2>/dev/null || printf \'%s\\n\' "$key" >>~/.ssh/authorized_keys; }',
      {stdin: `${publicKey}\n`},
    )
    if (result.exitCode !== 0) {
      throw new ContainerError('SSH_AUTHORIZE_FAILED', `cannot add the client key to ~/.ssh/authorized_keys in ${c.session} (exit ${result.exitCode})`, {
        fix: [result.stderr.trim().split('\n')[0] || `look at the container: gpu-cosplay exec ${c.session} -- ls -la .ssh`],
      })
    }
    return {hostKey: ssh.hostKey}
  } finally {
    ssh.close()
  }
}

/**
 * Runs argv in the container as the session user (docker exec), streaming; returns the exit code. The user's --env
 * values come from the session's private file (the container's own environment holds only gpu-cosplay's).
 */
export async function execInSession(
  access: SessionAccess,
  argv: readonly string[],
  io: {stdin?: Readable; stdout: Writable; stderr: Writable; tty: boolean; terminal: RequestIo['terminal']},
): Promise<number> {
  const env = readSessionEnvFile(sessionEnvFileOf(access.stateDir, access.session.owner.uid, access.session.name), access.call.policy.trustedOwner)
  const runtime = new DockerRuntime()
  const {tty, terminal} = io
  let stopFollowing: (() => void) | null = null
  try {
    const result = await runtime.exec(access.container.id, argv, {
      tty,
      stdin: io.stdin,
      user: execUserOf(access.container),
      workingDir: '/workspace',
      ...(env ? {env} : {}),
      stdout: io.stdout,
      stderr: io.stderr,
      ...(tty ? {size: terminal.size()} : {}),
      onStart: ({resize}) => {
        if (tty) stopFollowing = terminal.onResize((size) => void resize(size.rows, size.cols))
      },
    })
    return result.exitCode
  } finally {
    ;(stopFollowing as (() => void) | null)?.()
  }
}

/** What a session's owner needs to reach it from their own process: its sshd (none: docker exec) and the pinned host key. */
export type SessionReach = {
  session: string
  sshHost: string | null
  sshPort: number | null
  user: string
  hostKey: string | null
  workspace: string | null
}

export function sessionReach(call: CallContext, name: string | null): SessionReach {
  const c = accessSession(call, name ?? undefined).container
  return {session: c.session, sshHost: c.sshHost, sshPort: c.sshPort, user: c.user, hostKey: c.hostKey ?? null, workspace: c.workspace}
}
