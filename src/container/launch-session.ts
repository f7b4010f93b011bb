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
import type {SessionRecord} from '../apply/gpu-book.js'
import {stepFor} from '../apply/steps/registry.js'
import type {StepImpl} from '../apply/steps/step.js'
import {tearDown} from '../apply/tear-down.js'
import type {PreparedContainer, PrepareInput} from './prepare-container.js'
import {withMpsStatus} from './mps-readiness.js'
import {type Ready, readinessOf} from './readiness.js'
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

/** The default image is missing: bring-up gives up before any change, the build runs outside the GPU lock. */
class BuildNeeded extends Error {}

export async function launchSession(
  request: Omit<UpRequest, 'extraSteps' | 'beforeChanges'>,
  container: PrepareInput,
  deps: UpDeps & {readonly isRoot: boolean},
  hooks: LaunchHooks = {},
): Promise<LaunchedSession> {
  const docker: {runtime?: DockerRuntime; prepared?: PreparedContainer} = {}
  const prepare = async (mayBuild: boolean): Promise<void> => {
    const [{prepareContainer}, {DockerRuntime}] = await Promise.all([import('./prepare-container.js'), import('./runtime.js')])
    docker.runtime ??= new DockerRuntime()
    const outcome = await prepareContainer(container, docker.runtime, {mayBuild})
    if (outcome === 'build-needed') throw new BuildNeeded()
    docker.prepared = outcome
    // ssh2 loads (~30 ms) while the GPU steps wait on nvidia-smi, not after the container started
    if (outcome.options.sshPort !== null) import('./ssh-client.js').catch(() => undefined)
  }
  // The wait for the container starts with it: its entrypoint and sshd boot while bring-up sets the GPU-wide
  // settings. Stopped when bring-up fails (it removes the container).
  const stopWaiting = new AbortController()
  const waiting: {ready?: {readonly describe: string; readonly done: Promise<Ready>}} = {}
  const startStep = stepFor(deps.steps, 'start-container')
  const waitingStartStep: StepImpl = {
    ...startStep,
    async apply(ctx, params, prior) {
      const result = await startStep.apply(ctx, params, prior)
      const session = ctx.session as SessionRecord
      const container = sessionContainer(session)
      // ready means usable as planned: with MPS in the plan, its daemon running too
      const readiness = withMpsStatus(
        readinessOf(container, docker.prepared!.identity.privateKey, docker.runtime!),
        container,
        docker.runtime!,
        session.plan.mps,
      )
      const stop = hooks.cancel ? AbortSignal.any([stopWaiting.signal, hooks.cancel]) : stopWaiting.signal
      waiting.ready = {describe: readiness.describe, done: readiness.waitUntilReady(READY_TIMEOUT_MS, stop)}
      waiting.ready.done.catch(() => undefined) // awaited below once bring-up is done; unobserved when it fails
      return result
    },
  }
  const stageStep = stepFor(deps.steps, 'stage-mounts')
  const upRequest: UpRequest = {
    ...request,
    extraSteps: (session, live) => containerSteps(docker.prepared!.options, {start: waitingStartStep, stage: stageStep})(session, live),
  }

  let active: ActiveSession
  try {
    try {
      active = await bringUp({...upRequest, beforeChanges: () => prepare(false)}, deps)
    } catch (error) {
      if (!(error instanceof BuildNeeded)) throw error
      await prepare(true)
      // After an image build (minutes) the first look is old: bring-up looks again.
      active = await bringUp(upRequest, {...deps, firstListing: undefined})
    }
  } catch (error) {
    stopWaiting.abort()
    throw error
  }
  try {
    const {describe, done} = waiting.ready!
    hooks.onWait?.(describe)
    const {hostKey} = await done
    // every later login to this session accepts this key and no other
    if (hostKey !== null) {
      active.session.container!.hostKey = hostKey
      await amendSession(deps.stateDir, active.gpuUuid, active.name, (s) => {
        if (s.container?.id === active.session.container!.id) s.container.hostKey = hostKey
      })
    }
    // the user's --env values, written as the session user into their files (never through the root entrypoint)
    await deliverUserEnv(docker.runtime!, sessionContainer(active.session), docker.prepared!.options.env)
  } catch (error) {
    await tearDown([active.name], {uid: request.owner.uid, isRoot: deps.isRoot}, deps).catch(() => undefined)
    throw error
  }
  return {active, container: sessionContainer(active.session), prepared: docker.prepared!}
}
