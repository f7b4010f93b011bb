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
import {type ActiveSession, bringUp, type UpDeps, type UpRequest} from '../apply/bring-up.js'
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

/** The default image is missing: bring-up gives up before any change, and the build runs outside the GPU lock. */
class BuildNeeded extends Error {}

/**
 * The phases, in order:
 * 1. Docker, the image and the ssh key are settled while bring-up reads the GPUs under their locks (bring-up waits
 *    for them after planning, before its first change). A missing default image ends this try before any change;
 *    it is built with no lock held, and bring-up starts again.
 * 2. The GPU steps, then the container step, in one journal (apply/bring-up.ts); the container boots while the
 *    GPU-wide settings, which come last, are set.
 * 3. The container is waited for until usable (its sshd, or its entrypoint, and with MPS in the plan its daemon).
 * 4. The host key it showed is pinned in the record, and the user's --env values are handed to the session user.
 * A session that never becomes usable is ended as `down` ends it.
 */
export async function launchSession(
  request: Omit<UpRequest, 'extraSteps' | 'beforeChanges'>,
  container: PrepareInput,
  deps: UpDeps & {readonly isRoot: boolean},
  hooks: LaunchHooks = {},
): Promise<LaunchedSession> {
  const docker = dockerOf(container)
  const steps = {start: stepFor(deps.steps, 'start-container'), stage: stepFor(deps.steps, 'stage-mounts')}
  const upRequest = (prepared: () => PreparedContainer): UpRequest => ({
    ...request,
    extraSteps: (session, live) => containerSteps(prepared().options, steps)(session, live),
  })

  // 1 and 2
  let active: ActiveSession
  try {
    active = await bringUp({...upRequest(docker.prepared), beforeChanges: () => docker.prepare(false)}, deps)
  } catch (error) {
    if (!(error instanceof BuildNeeded)) throw error
    await docker.prepare(true)
    // after an image build (minutes) the first look is old: bring-up looks again
    active = await bringUp(upRequest(docker.prepared), {...deps, firstListing: undefined})
  }
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
    async prepare(mayBuild: boolean): Promise<void> {
      const [{prepareContainer}, {DockerRuntime}] = await Promise.all([import('./prepare-container.js'), import('./runtime.js')])
      runtime ??= new DockerRuntime()
      const outcome = await prepareContainer(input, runtime, {mayBuild})
      if (outcome === 'build-needed') throw new BuildNeeded()
      prepared = outcome
      // ssh2 loads (~30 ms) while the GPU steps wait on nvidia-smi, not after the container started
      if (outcome.options.sshPort !== null) import('./ssh-client.js').catch(() => undefined)
    },
    prepared: () => settled(prepared, 'the prepared container'),
    runtime: () => settled(runtime, 'Docker'),
  }
}
