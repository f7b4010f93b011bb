/**
 * A session whose plan needs MPS is usable only once its daemon runs: the entrypoint writes one status line (see
 * CONTAINER_MPS_STATUS_FILE) before sshd starts, and `up` reads it once the container is ready. Anything but
 * `running` fails the session, which launch-session.ts then ends through `down`'s path: a session that silently had
 * the whole slice would break the plan `up` printed.
 */
import {ContainerError} from '../core/errors.js'
import {CONTAINER_MPS_STATUS_FILE, UNPRIVILEGED_MPS_STATUS_FILE} from '../core/names.js'
import {NOT_YET, pollUntil} from '../core/poll.js'
import type {Readiness} from './readiness.js'
import type {DockerRuntime} from './runtime.js'
import {execUserOf, type SessionContainer} from './session-container.js'

/** What the plan asked of the session's daemon; null: planned without MPS (nothing to wait for). */
export type MpsWanted = {readonly activeThreadPercentage: number; readonly pinnedMemLimitMiB: number} | null

export type MpsDecision = {readonly kind: 'ready'} | {readonly kind: 'waiting'} | {readonly kind: 'failed'; readonly why: string}

/** The decision on one reading of the status file (null: not there yet). */
export function decideMpsStatus(line: string | null, wanted: MpsWanted): MpsDecision {
  if (wanted === null) return {kind: 'ready'}
  const text = line?.trim() ?? ''
  if (text === '') return {kind: 'waiting'}
  const [word] = text.split(/[\s:]/, 1)
  if (word === 'running') return {kind: 'ready'}
  const why = text.slice(word.length).replace(/^:\s*/, '').trim()
  return {kind: 'failed', why: why === '' ? `the entrypoint says "${word}"` : why}
}

/** The error `up` fails with; `why` is the entrypoint's reason. */
export function mpsNotRunning(container: SessionContainer, wanted: NonNullable<MpsWanted>, why: string): ContainerError {
  const unavailable = /^no \S*nvidia-cuda-mps-control\b/.test(why)
  return new ContainerError(
    'MPS_NOT_RUNNING',
    `the MPS daemon of ${container.session} is not running (${why}): without it the session would have the whole device, not the planned ${wanted.activeThreadPercentage}% active threads and ${wanted.pinnedMemLimitMiB} MiB pinned limit`,
    {
      // as the host daemon's MPS_FAILED: the session cannot be shaped as planned
      exit: 3,
      fix: [
        ...(unavailable ? ['use an image that has nvidia-cuda-mps-control (the NVIDIA Container Toolkit mounts it with the compute capability)'] : []),
        'or come up without MPS shaping, as the plan then says: gpu-cosplay up <gpu> --no-mps',
      ],
    },
  )
}

/** `ready`, then the entrypoint's MPS status within what is left of the same timeout. */
export function withMpsStatus(ready: Readiness, container: SessionContainer, runtime: DockerRuntime, wanted: MpsWanted): Readiness {
  if (wanted === null) return ready
  const file = container.unprivileged ? UNPRIVILEGED_MPS_STATUS_FILE : CONTAINER_MPS_STATUS_FILE
  const read = async () => {
    const ran = await runtime.exec(container.id, ['cat', file], {user: execUserOf(container)}).catch(() => null)
    return ran?.exitCode === 0 ? ran.stdout : null
  }
  return {
    describe: ready.describe,
    async waitUntilReady(timeoutMs, signal) {
      const deadline = Date.now() + timeoutMs
      const result = await ready.waitUntilReady(timeoutMs, signal)
      // written before sshd starts: after the login it is there, the polling is for a slow file system
      return pollUntil(
        async () => {
          const decision = decideMpsStatus(await read(), wanted)
          if (decision.kind === 'failed') throw mpsNotRunning(container, wanted, decision.why)
          return decision.kind === 'ready' ? result : NOT_YET
        },
        {intervalMs: 100, deadline, signal, timedOut: () => mpsNotRunning(container, wanted, `the entrypoint wrote no ${file}`)},
      )
    },
  }
}
