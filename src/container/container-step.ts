/**
 * The journal step that starts a session's container: the last step of `up`, so the first one `down`
 * undoes. A factory taking the Docker runtime; session-steps.ts puts it in the registry every mutating
 * command hands the engine, so a journal naming 'start-container' is undone by any of them.
 *
 * Params are the whole container spec (JSON), so undo never needs anything but the journal entry. The
 * container carries the session label: an entry still 'intended' (the process died between "container
 * created" and "recorded") is undone by finding the container by that label.
 */
import createDebug from 'debug'

import type {ContainerAccess, JournalEntry} from '../apply/gpu-book.js'
import type {Json, StepContext, StepImpl} from '../apply/steps/step.js'
import {DEBUG_NS, LABELS} from '../core/names.js'
import type {ContainerSpec, DockerRuntime} from './runtime.js'
import {connectHost} from './connect-host.js'
import {removeSessionEnvFile, writeSessionEnvFile} from './session-env-file.js'

const debug = createDebug(DEBUG_NS.container)

export type StartContainerParams = {
  readonly spec: ContainerSpec
  /** how the session commands reach it, stored typed in the session record once it runs */
  readonly access: ContainerAccess
  /** the image as the user named it; spec.image is its ID (journals written before the pinning lack this) */
  readonly imageRef?: string
  /**
   * the user's --env values for `gpu-cosplay exec`, kept in a private file of the state directory (session-env-file.ts)
   * and removed by undo; journaled with every value "(not recorded)", the live apply gets the real ones
   */
  readonly userEnv?: {
    readonly file: string
    readonly owner: {readonly uid: number; readonly gid: number} | null
    readonly values: Readonly<Record<string, string>>
  }
}

/** The engine client, made when a step first needs it: undoing a journal without a container loads no dockerode. */
export type RuntimeFactory = () => Promise<DockerRuntime>

export function startContainerStep(runtime: RuntimeFactory): StepImpl {
  return {
    kind: 'start-container',

    describe(params: Json): string {
      const {spec, imageRef} = params as StartContainerParams
      return `start container ${spec.name} from ${imageRef ?? spec.image}`
    },

    async readPrior(): Promise<Json> {
      return {}
    },

    async apply(ctx: StepContext, params: Json): Promise<Json> {
      const {spec, access, imageRef, userEnv} = params as StartContainerParams
      // before the container exists: the session is usable with its values from its first exec
      if (userEnv) writeSessionEnvFile(userEnv.file, userEnv.values, userEnv.owner)
      const started = await (await runtime()).createAndStart(spec)
      const sshHost = started.sshPort === null ? null : connectHost(started.sshBindAddress ?? spec.sshBindAddress ?? null)
      const image = imageRef === undefined ? {image: spec.image} : {image: imageRef, imageId: spec.image}
      ctx.session.container = {id: started.id, name: started.name, ...image, sshPort: started.sshPort, sshHost, ...access}
      return {id: started.id, name: started.name, sshPort: started.sshPort, sshBindAddress: started.sshBindAddress}
    },

    async undo(ctx: StepContext, entry: JournalEntry): Promise<void> {
      const docker = await runtime()
      const {spec} = entry.params as StartContainerParams
      const ids = new Set<string>()
      const recordedId = (entry.result as {id?: string} | null)?.id
      if (recordedId) ids.add(recordedId)
      // Also (and for an 'intended' entry, only) whatever carries this session's label and the name we asked for.
      const session = spec.labels[LABELS.session]
      if (session) {
        for (const found of await docker.listByLabel({[LABELS.session]: session})) {
          if (found.name === spec.name || found.id === recordedId) ids.add(found.id)
        }
      }
      for (const id of ids) {
        const outcome = await docker.remove(id, {force: true})
        debug('undo start-container %s: %s', id.slice(0, 12), outcome)
      }
      if (ids.size === 0) debug('undo start-container %s: nothing to remove', spec.name)
      const {userEnv} = entry.params as StartContainerParams
      // only a file of the shape session-env-file.ts names: a journal is no licence to remove anything else
      if (userEnv && /\/users\/\d+\/[^/]+\.env$/.test(userEnv.file)) removeSessionEnvFile(userEnv.file)
      ctx.session.container = null
    },
  }
}
