/**
 * The user's `--env` values reach the session user's shells (login shells, `ssh host cmd`, sftp, VS Code) through files
 * of the user's own, written once the container is ready by the entrypoint's `--user-env` part run through `docker
 * exec` as the session user's uid:gid: the values travel on stdin (NAME=VALUE, each ended by a NUL), never on a command
 * line, and nothing of them is ever seen by a process of root's. The root entrypoint writes only fixed files that read
 * the user's (docker/entrypoint.sh: write_session_env, write_user_env).
 */
import {Readable} from 'node:stream'

import {ContainerError} from '../core/errors.js'
import type {DockerRuntime} from './runtime.js'
import {COSPLAY_DIR, type SessionContainer} from './session-container.js'

/** The exec writes two small files: anything slower is a container in trouble. */
export const USER_ENV_TIMEOUT_MS = 30_000

/** The stdin --user-env reads. A value cannot hold a NUL (nothing that came through argv or the environment can). */
export function userEnvInput(env: Readonly<Record<string, string>>): Buffer {
  return Buffer.from(
    Object.entries(env)
      .map(([name, value]) => `${name}=${value}\0`)
      .join(''),
    'utf8',
  )
}

/**
 * Writes the values into the session user's files in the container. Nothing to do without values, or in a container
 * where nothing ran as root to make the user (sessions there go through `gpu-cosplay exec`, which passes the values).
 */
export async function deliverUserEnv(runtime: DockerRuntime, container: SessionContainer, env: Readonly<Record<string, string>>): Promise<void> {
  if (Object.keys(env).length === 0 || container.unprivileged) return
  const result = await runtime.exec(container.id, [`${COSPLAY_DIR}/entrypoint.sh`, '--user-env'], {
    user: `${container.uid}:${container.gid}`,
    stdin: Readable.from([userEnvInput(env)]),
    timeoutMs: USER_ENV_TIMEOUT_MS,
  })
  if (result.exitCode !== 0) {
    const why = result.stderr.trim().split('\n').pop() || `exit ${result.exitCode}`
    throw new ContainerError('USER_ENV_FAILED', `cannot write your --env values for ${container.user} in ${container.session}: ${why}`, {
      fix: [`look at the container: docker logs ${container.name}`, 'an image of another gpu-cosplay version lacks the entrypoint part that writes them'],
    })
  }
}
