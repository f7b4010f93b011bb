/**
 * `up` with a container: settle Docker, image, key and port before the GPU lock (no GPU change without
 * them), run the GPU steps and the container step as one journaled session, then wait until the container
 * is usable. A session that never becomes usable is ended: one rollback path, through `down`'s.
 */
import {type ActiveSession, bringUp, type UpDeps, type UpRequest} from '../apply/bring-up.js'
import {stepFor} from '../apply/steps/registry.js'
import {tearDown} from '../apply/tear-down.js'
import {type PreparedContainer, type PrepareInput, prepareContainer} from './prepare-container.js'
import {readinessOf} from './readiness.js'
import {DockerRuntime} from './runtime.js'
import {containerSteps, type SessionContainer, sessionContainer} from './session-container.js'

export type LaunchHooks = {
  /** the GPU part is done; the container is being waited for */
  readonly onWait?: (what: string) => void
}

export type LaunchedSession = {
  readonly active: ActiveSession
  readonly container: SessionContainer
  readonly prepared: PreparedContainer
}

export const READY_TIMEOUT_MS = 30_000

export async function launchSession(
  request: Omit<UpRequest, 'extraSteps'>,
  container: PrepareInput,
  deps: UpDeps & {readonly isRoot: boolean},
  hooks: LaunchHooks = {},
): Promise<LaunchedSession> {
  const runtime = new DockerRuntime()
  // bring-up's first look at the GPUs (`-L`, read-only, before any lock) runs while Docker answers.
  const firstListing = deps.firstListing ?? deps.gpu.listGpus()
  firstListing.catch(() => undefined) // a failure surfaces through bring-up's own await
  const prepared = await prepareContainer(container, runtime)
  // After an image build (minutes) the first look is old: bring-up looks again.
  const active = await bringUp(
    {...request, extraSteps: containerSteps(prepared.options, stepFor(deps.steps, 'start-container'))},
    {...deps, firstListing: prepared.built === null ? firstListing : undefined},
  )
  const started = sessionContainer(active.session)
  try {
    const readiness = readinessOf(started, prepared.identity.privateKey, runtime)
    hooks.onWait?.(readiness.describe)
    await readiness.waitUntilReady(READY_TIMEOUT_MS)
  } catch (error) {
    await tearDown([active.name], {uid: request.owner.uid, isRoot: deps.isRoot}, deps).catch(() => undefined)
    throw error
  }
  return {active, container: started, prepared}
}
