/**
 * Container state beside the GPU state, for `ps` and `status`: one Docker call for all sessions.
 * Load with `await import()` (it pulls in dockerode). Never throws: an unreachable Docker daemon is reported as such.
 */
import {LABELS} from '../core/names.js'
import {DockerRuntime} from './runtime.js'

export type ContainerState = {
  readonly id: string
  readonly name: string
  readonly image: string
  /** running, exited, created, ... */
  readonly state: string
  /** Docker's words, e.g. "Up 3 minutes" */
  readonly status: string
  readonly sshPort: number | null
}

export type ContainerStates =
  {readonly reachable: true; readonly bySession: Readonly<Record<string, ContainerState>>} | {readonly reachable: false; readonly reason: string}

/** Every container labelled with a gpu-cosplay session, keyed by session name. */
export async function readContainerStates(runtime: DockerRuntime = new DockerRuntime()): Promise<ContainerStates> {
  try {
    const found = await runtime.listByLabel({[LABELS.session]: true})
    const bySession: Record<string, ContainerState> = {}
    for (const c of found) {
      bySession[c.labels[LABELS.session]] = {id: c.id, name: c.name, image: c.image, state: c.state, status: c.status, sshPort: c.sshPort}
    }
    return {reachable: true, bySession}
  } catch (error) {
    return {reachable: false, reason: (error as Error).message}
  }
}
