/**
 * What the session commands (ssh, exec, verify, report, ssh-config) share: find the session (by name, or the
 * caller's only one) and its container, and run things in it. Loaded lazily: it pulls in dockerode and ssh2.
 */
import {homedir} from 'node:os'
import type {Readable, Writable} from 'node:stream'

import {resolveStateDir, userDirOf} from '../../apply/state-dir.js'
import {pickSession} from '../../container/pick-session.js'
import {DockerRuntime} from '../../container/runtime.js'
import {type SessionContainer, sessionContainer} from '../../container/session-container.js'
import {loadOrCreateSshIdentity, type SshIdentity} from '../../container/ssh-keys.js'
import {invokingUser} from '../../core/invoking-user.js'

export type SessionAccess = {
  readonly container: SessionContainer
  readonly stateDir: string
  readonly uid: number
}

/** The session's container; no GPU privileges needed. */
export function accessSession(name: string | undefined): SessionAccess {
  const stateDir = resolveStateDir(process.env, homedir()).dir
  const user = invokingUser()
  const session = pickSession(stateDir, name, {uid: user.uid, isRoot: user.isRoot})
  return {container: sessionContainer(session), stateDir, uid: session.owner.uid}
}

export function identityFor(access: SessionAccess): Promise<SshIdentity> {
  return loadOrCreateSshIdentity({userDir: userDirOf(access.stateDir, access.uid)})
}

/** Runs argv in the container as the session user (docker exec), streaming; returns the exit code. */
export async function execInSession(
  access: SessionAccess,
  argv: readonly string[],
  io: {stdin?: Readable; stdout: Writable; stderr: Writable; tty: boolean},
): Promise<number> {
  const runtime = new DockerRuntime()
  const stdout = io.stdout
  const tty = io.tty
  let onResize: (() => void) | null = null
  const result = await runtime.exec(access.container.id, argv, {
    tty,
    stdin: io.stdin,
    user: access.container.user,
    workingDir: '/workspace',
    stdout,
    stderr: io.stderr,
    ...(tty ? {size: {rows: process.stdout.rows ?? 24, cols: process.stdout.columns ?? 80}} : {}),
    onStart: ({resize}) => {
      if (!tty) return
      onResize = () => void resize(process.stdout.rows ?? 24, process.stdout.columns ?? 80)
      process.stdout.on('resize', onResize)
    },
  })
  if (onResize) process.stdout.off('resize', onResize)
  return result.exitCode
}

/** Puts the local terminal in raw mode for an interactive session; returns the undo. */
export function rawTerminal(): () => void {
  const stdin = process.stdin
  if (!stdin.isTTY) return () => undefined
  stdin.setRawMode(true)
  stdin.resume()
  return () => {
    stdin.setRawMode(false)
    stdin.pause()
  }
}

/** After streaming process.stdin into a session: let the process exit. */
export function releaseStdin(): void {
  process.stdin.pause()
  process.stdin.unref?.()
  if (!process.stdin.isTTY) process.stdin.destroy()
}
