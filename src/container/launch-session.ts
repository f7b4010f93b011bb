/**
 * `up` with a container: settle Docker, image and key while bring-up reads the GPU under its lock (no GPU
 * change without them), run the GPU steps and the container step as one journaled session, then wait until
 * the container is usable (with MPS in the plan: its daemon running, see mps-readiness.ts) and hand the user's --env
 * values to the session user (user-env.ts). A session that never becomes usable is ended: one rollback path, through
 * `down`'s.
 *
 * Docker is loaded lazily (dockerode alone takes ~90 ms to load): overlapping that with the GPU read is most of
 * what keeps `up` under a second.
 */
import {type ActiveSession, type UpDeps, type UpRequest, underway} from '../apply/bring-up.js'
import {amendSession} from '../apply/book-store.js'
import {stepFor} from '../apply/steps/registry.js'
import {tearDown} from '../apply/tear-down.js'
import type {PreparedContainer, PrepareInput} from './prepare-container.js'
import {withMpsStatus} from './mps-readiness.js'
import {readinessOf} from './readiness.js'
import type {DockerRuntime} from './runtime.js'
import {containerSteps, type SessionContainer, sessionContainer} from './session-container.js'
import {deliverUserEnv} from './user-env.js'

export type LaunchHooks = {
  /** the GPU part is done; the container (its sshd, or its entrypoint) is being waited for */
  readonly onWait?: (what: string) => void
  /** Ctrl-C (or the member's client gone): a container still booting is not waited for, the session is ended */
  readonly cancel?: AbortSignal
}

export type LaunchedSession = {
  readonly active: ActiveSession
  readonly container: SessionContainer
  readonly prepared: PreparedContainer
}

export const READY_TIMEOUT_MS = 30_000

/**
 * The phases, in order:
 * 1. The name claimed; then side by side: the GPUs locked and read and the session planned (apply/bring-up.ts), and
 *    Docker, the image and the ssh key settled. A missing default image ends this try before any change; it is built with no lock held,
 *    and the GPU side starts again.
 * 2. The GPU steps, then the container step, then the GPU-wide settings, in one journal: the container boots while
 *    the GPU-wide settings are set.
 * 3. The container is waited for until usable (its sshd, or its entrypoint, and with MPS in the plan its daemon).
 * 4. The host key it showed is pinned in the record, and the user's --env values are handed to the session user.
 * A session that never becomes usable is ended as `down` ends it.
 */
export async function launchSession(
  request: UpRequest,
  container: PrepareInput,
  deps: UpDeps & {readonly isRoot: boolean},
  hooks: LaunchHooks = {},
): Promise<LaunchedSession> {
  const docker = dockerOf(container)
  // 1 and 2
  let active = await upBeside(() => docker.prepare(false), request, deps)
  if (active === 'build-needed') {
    // built with no GPU lock held; after a build (minutes) the first look is old: bring-up looks again
    const built = await docker.prepare(true)
    active = await upBeside(async () => built, request, {...deps, firstListing: undefined})
  }
  if (active === 'build-needed') throw new Error('launchSession: the image was built, and is still missing')
  const prepared = docker.prepared()
  const launched = sessionContainer(active.session)

  try {
    // 3
    const readiness = withMpsStatus(readinessOf(launched, prepared.identity.privateKey, docker.runtime()), launched, docker.runtime(), active.plan.mps)
    hooks.onWait?.(readiness.describe)
    const {hostKey} = await readiness.waitUntilReady(READY_TIMEOUT_MS, hooks.cancel)
    // 4: every later login to this session accepts this key and no other
    if (hostKey !== null) {
      active.session.container!.hostKey = hostKey
      await amendSession(deps.stateDir, deps.trust, active.gpuUuid, active.name, (s) => {
        if (s.container?.id === launched.id) s.container.hostKey = hostKey
      })
    }
    // the user's --env values, written as the session user into their files (never through the root entrypoint)
    await deliverUserEnv(docker.runtime(), launched, prepared.options.env)
  } catch (error) {
    await tearDown([active.name], {uid: request.owner.uid, isRoot: deps.isRoot}, deps).catch(() => undefined)
    throw error
  }
  return {active, container: sessionContainer(active.session), prepared}
}

/**
 * bring-up's phases with the container's between them: once the name is claimed, Docker, the image and the key are
 * settled (`prepare`) beside the GPUs' locked read and the planning, and awaited before the session is recorded (no GPU
 * change without them); the container's steps run in the session's journal after its devices and before the GPU-wide
 * settings. 'build-needed': the image is missing, and nothing was changed.
 */
export async function upBeside(
  prepare: () => Promise<PreparedContainer | 'build-needed'>,
  request: UpRequest,
  deps: UpDeps,
): Promise<ActiveSession | 'build-needed'> {
  return await underway(request, deps, async (up) => {
    const preparing = prepare()
    preparing.catch(() => undefined) // awaited below; unobserved only when the GPU side fails first
    await up.read()
    await up.plan()
    const prepared = await preparing
    if (prepared === 'build-needed') return 'build-needed'
    await up.record()
    await up.makeDevices()
    const impls = {start: stepFor(deps.steps, 'start-container'), stage: stepFor(deps.steps, 'stage-mounts')}
    await up.runSteps(containerSteps(prepared.options, impls)(up.session, up.live))
    await up.setGpuWide()
    return up.activate()
  })
}

/**
 * Docker for one `up`, loaded on first use (dockerode alone takes ~90 ms to load: loaded while the GPU is read, it
 * costs nothing), and what was prepared with it.
 */
function dockerOf(input: PrepareInput) {
  let runtime: DockerRuntime | null = null
  let prepared: PreparedContainer | null = null
  const settled = <T>(value: T | null, what: string): T => {
    if (value === null) throw new Error(`launchSession: ${what} read before the container was prepared`)
    return value
  }
  return {
    async prepare(mayBuild: boolean): Promise<PreparedContainer | 'build-needed'> {
      const [{prepareContainer}, {DockerRuntime}] = await Promise.all([import('./prepare-container.js'), import('./runtime.js')])
      runtime ??= new DockerRuntime()
      const outcome = await prepareContainer(input, runtime, {mayBuild})
      if (outcome === 'build-needed') return outcome
      prepared = outcome
      // ssh2 loads (~30 ms) while the GPU steps wait on nvidia-smi, not after the container started
      if (outcome.options.sshPort !== null) import('./ssh-client.js').catch(() => undefined)
      return outcome
    },
    prepared: () => settled(prepared, 'the prepared container'),
    runtime: () => settled(runtime, 'Docker'),
  }
}
