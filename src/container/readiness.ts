/**
 * How `up` knows a session's container is usable, as small strategies (after testcontainers-node's wait
 * strategies): an ssh login when sshd is published, else the entrypoint having made the session user.
 */
import {ContainerError} from '../core/errors.js'
import {CONTAINER_READY_MARKER, UNPRIVILEGED_READY_MARKER} from '../core/names.js'
import {NOT_YET, pollUntil} from '../core/poll.js'
import type {DockerRuntime} from './runtime.js'
import {execUserOf, type SessionContainer} from './session-container.js'

/** What the wait learnt: the host key sshd presented at the first login (null without sshd), for later logins to pin. */
export type Ready = {readonly hostKey: string | null}

export type Readiness = {
  /** for progress: what is awaited */
  readonly describe: string
  /** `signal` stops the wait (the session is being undone) */
  waitUntilReady(timeoutMs: number, signal?: AbortSignal): Promise<Ready>
}

/**
 * Trust on first use, at the one moment it is safe: the container was created a moment ago from a pinned image,
 * sshd's host key was generated in it, and nobody but this process has logged in yet.
 */
export function sshLogin(container: SessionContainer, privateKey: Buffer | string): Readiness {
  return {
    describe: `ssh on ${container.sshHost}:${container.sshPort}`,
    async waitUntilReady(timeoutMs, signal) {
      const {SshSession} = await import('./ssh-client.js')
      const ssh = await SshSession.connectWithRetry(
        {host: container.sshHost!, port: container.sshPort!, username: container.user, privateKey},
        {timeoutMs, signal},
      )
      ssh.close()
      return {hostKey: ssh.hostKey}
    },
  }
}

/** Without sshd there is no login to wait for: wait until the entrypoint has made the user, so exec works at once. */
export function entrypointDone(container: SessionContainer, runtime: DockerRuntime): Readiness {
  return {
    describe: `the entrypoint of ${container.name}`,
    async waitUntilReady(timeoutMs, signal) {
      // nothing runs as root there: no user to make, the entrypoint says it is done in a folder it can write
      const done = container.unprivileged
        ? async () =>
            (await runtime.exec(container.id, ['test', '-f', UNPRIVILEGED_READY_MARKER], {user: execUserOf(container)}).catch(() => null))?.exitCode === 0
        : async () => {
            const marker = await runtime.exec(container.id, ['test', '-f', CONTAINER_READY_MARKER]).catch(() => null)
            const who = marker?.exitCode === 0 ? await runtime.exec(container.id, ['id', '-u', container.user]).catch(() => null) : null
            return who?.exitCode === 0
          }
      return pollUntil(async () => ((await done()) ? {hostKey: null} : NOT_YET), {
        intervalMs: 100,
        deadline: Date.now() + timeoutMs,
        signal,
        timedOut: () =>
          new ContainerError(
            'CONTAINER_NOT_READY',
            `the entrypoint of ${container.session} did not ${container.unprivileged ? 'finish' : `create user ${container.user}`} within ${Math.round(timeoutMs / 1000)} s`,
            {
              fix: [`look at its log: docker logs ${container.name}`],
            },
          ),
      })
    },
  }
}

export function readinessOf(container: SessionContainer, privateKey: Buffer | string, runtime: DockerRuntime): Readiness {
  return container.sshPort !== null && container.sshHost !== null ? sshLogin(container, privateKey) : entrypointDone(container, runtime)
}
