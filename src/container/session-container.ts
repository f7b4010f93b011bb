/**
 * What a session's container is made of (the spec the 'start-container' step journals) and, read back from
 * a session's journal, how to reach it. Pure: no Docker, no ssh; `up` and the session commands use it.
 */
import path from 'node:path'

import type {SessionRecord} from '../apply/gpu-book.js'
import type {PlannedStep} from '../apply/steps/step.js'
import {ContainerError, InputError} from '../core/errors.js'
import {LABELS} from '../core/names.js'
import type {HostGpu} from '../host/types.js'
import {costumeEnv} from '../plan/costume-env.js'
import type {Plan} from '../plan/types.js'
import type {ContainerSpec, ImageInfo} from './runtime.js'

/** Where a BYO image gets the entrypoint and hooks bind-mounted (the same paths the cosplay image uses). */
export const COSPLAY_DIR = '/opt/gpu-cosplay'

export type ContainerOptions = {
  readonly image: ImageInfo
  /** the image reference the user gave or the default tag */
  readonly imageRef: string
  readonly owner: {readonly uid: number; readonly gid: number; readonly user: string}
  readonly authorizedKeys: readonly string[]
  /** host folder mounted at /workspace (absolute) */
  readonly workspace: string
  /** extra 'host:container[:ro]' binds */
  readonly volumes: readonly string[]
  readonly env: Readonly<Record<string, string>>
  /** host port for sshd (null: the image has no sshd, sessions go through docker exec) */
  readonly sshPort: number | null
  readonly sshBind: string
  readonly shmSizeBytes: number | null
  readonly hasTf32: boolean
  /** installed package root (docker/, runtime-hooks/) */
  readonly packageRoot: string
}

/** The account the entrypoint creates: the host user's name when it is a valid one, else "cosplay". */
export function containerUserName(user: string): string {
  return /^[a-z_][a-z0-9_-]{0,31}$/.test(user) ? user : 'cosplay'
}

export function containerNameFor(session: string): string {
  return `gpu-cosplay-${session}`
}

/** What the journal keeps of a user's --env values: the state directory is shared with the team. */
export const REDACTED = '(not recorded)'

/**
 * The step list `up` hands to bringUp as extraSteps. The journal records the spec with the user's --env
 * values redacted (undo needs only the name and labels); the live run starts the container with the real ones.
 */
export function containerSteps(options: ContainerOptions, impl: PlannedStep['impl']): (session: SessionRecord, live: HostGpu) => PlannedStep[] {
  return (session, live) => {
    const spec = containerSpecFor(session, live, options)
    const recorded = {...spec, env: {...spec.env}}
    for (const [key, value] of Object.entries(options.env)) if (spec.env[key] === value) recorded.env[key] = REDACTED
    const withSecrets: PlannedStep['impl'] = {...impl, apply: (ctx, _params, prior) => impl.apply(ctx, {spec}, prior)}
    return [{impl: withSecrets, params: {spec: recorded}}]
  }
}

export function containerSpecFor(session: SessionRecord, live: HostGpu, o: ContainerOptions): ContainerSpec {
  const plan = session.plan as unknown as Plan
  const physicalMiB = plan.mig ? Math.round(plan.mig.memoryGiB * 1024) : (live.memoryTotalMiB ?? Math.round(plan.vramCapGB * 1024))
  const device = session.mig?.uuid ?? live.uuid
  const user = containerUserName(o.owner.user)
  const env: Record<string, string> = {
    ...costumeEnv(plan, {hasTf32: o.hasTf32}, physicalMiB, session.name),
    ...o.env,
    NVIDIA_VISIBLE_DEVICES: device,
    GPU_COSPLAY_USER: user,
    GPU_COSPLAY_UID: String(o.owner.uid),
    GPU_COSPLAY_GID: String(o.owner.gid),
    GPU_COSPLAY_SSH_PUBKEY: o.authorizedKeys.join('\n'),
  }
  const binds = [`${o.workspace}:/workspace`, ...o.volumes]
  const byo = !o.image.isCosplayImage
  if (byo) {
    binds.push(`${path.join(o.packageRoot, 'docker', 'entrypoint.sh')}:${COSPLAY_DIR}/entrypoint.sh:ro`)
    binds.push(`${path.join(o.packageRoot, 'runtime-hooks')}:${COSPLAY_DIR}/hooks:ro`)
    // docker exec sees Config.Env only: put the shim first on PATH there too
    const imagePath = o.image.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    if (env.PATH === undefined) env.PATH = `${COSPLAY_DIR}/bin:${imagePath}`
  }
  return {
    name: containerNameFor(session.name),
    image: o.imageRef,
    labels: {
      [LABELS.session]: session.name,
      [LABELS.owner]: String(o.owner.uid),
      [LABELS.target]: session.target.key,
      [LABELS.hostGpu]: String(live.index),
      [LABELS.gpuUuid]: live.uuid,
      ...(session.mig?.uuid ? {[LABELS.migUuid]: session.mig.uuid} : {}),
    },
    env,
    deviceIds: [device],
    sshPort: o.sshPort,
    sshBindAddress: o.sshBind,
    binds,
    ...(o.shmSizeBytes ? {shmSizeBytes: o.shmSizeBytes} : {}),
    ...(byo ? {entrypoint: [`${COSPLAY_DIR}/entrypoint.sh`], cmd: [], init: true} : {}),
  }
}

/** How to reach a session's container, read from its journal. */
export type SessionContainer = {
  readonly session: string
  readonly id: string
  readonly name: string
  readonly image: string
  /** null: no sshd published; sessions go through docker exec */
  readonly sshPort: number | null
  /** where to connect (the bind address, or 127.0.0.1 for a wildcard bind) */
  readonly sshHost: string | null
  readonly user: string
  readonly uid: number
  readonly gid: number
  /** host folder mounted at /workspace */
  readonly workspace: string | null
}

export function sessionContainer(session: SessionRecord): SessionContainer {
  const entry = session.journal.find((e) => e.kind === 'start-container' && e.state === 'done')
  if (!session.container || !entry) {
    throw new ContainerError('NO_CONTAINER', `session "${session.name}" has no container (started with --no-container?)`, {
      fix: ['run your workload on the host with the variables `up --no-container` printed'],
    })
  }
  const spec = (entry.params as {spec: ContainerSpec}).spec
  const result = (entry.result ?? {}) as {sshBindAddress?: string | null}
  const bind = result.sshBindAddress ?? spec.sshBindAddress ?? null
  const workspaceBind = (spec.binds ?? []).find((b) => b.split(':')[1] === '/workspace')
  return {
    session: session.name,
    id: session.container.id,
    name: session.container.name,
    image: session.container.image,
    sshPort: session.container.sshPort,
    sshHost: session.container.sshPort === null ? null : connectHost(bind),
    user: spec.env.GPU_COSPLAY_USER ?? 'cosplay',
    uid: Number(spec.env.GPU_COSPLAY_UID),
    gid: Number(spec.env.GPU_COSPLAY_GID),
    workspace: workspaceBind ? workspaceBind.split(':')[0] : null,
  }
}

export function connectHost(bind: string | null): string {
  if (!bind || bind === '0.0.0.0' || bind === '::' || bind === '[::]') return '127.0.0.1'
  return bind
}

/** '1g', '512m', '2GiB', '1073741824' -> bytes. */
export function parseByteSize(text: string, flag = '--shm-size'): number {
  const match = /^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$/i.exec(text)
  if (!match) throw new InputError('BAD_SIZE', `${flag} ${text}: not a size (e.g. 512m, 2g)`)
  const power = {'': 0, k: 1, m: 2, g: 3, t: 4}[match[2].toLowerCase() as '' | 'k' | 'm' | 'g' | 't']
  return Math.round(Number(match[1]) * 1024 ** power)
}

/** --env K=V */
export function parseEnvFlags(items: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {}
  for (const item of items) {
    const at = item.indexOf('=')
    const key = at > 0 ? item.slice(0, at) : ''
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new InputError('BAD_ENV', `--env ${item}: expected NAME=VALUE`)
    env[key] = item.slice(at + 1)
  }
  return env
}

/** --volume HOST:CONTAINER[:ro|rw]; the host side becomes absolute. */
export function parseVolumeFlags(items: readonly string[], cwd: string): string[] {
  return items.map((item) => {
    const parts = item.split(':')
    if (parts.length < 2 || parts.length > 3 || !parts[0] || !parts[1].startsWith('/') || (parts[2] && !/^(ro|rw)$/.test(parts[2]))) {
      throw new InputError('BAD_VOLUME', `--volume ${item}: expected HOST:CONTAINER[:ro] with an absolute container path`)
    }
    const host = parts[0].startsWith('/') || parts[0].startsWith('.') ? path.resolve(cwd, parts[0]) : parts[0]
    return [host, ...parts.slice(1)].join(':')
  })
}
