/**
 * What a session's container is made of (the spec the 'start-container' step journals) and, read back from
 * the session record, how to reach it. No Docker, no ssh: `up` and the session commands use it.
 */
import path from 'node:path'

import {type ContainerAccess, type ContainerRecord, type SessionRecord, deviceOfRank} from '../apply/gpu-book.js'
import type {PlannedStep, StepImpl} from '../apply/steps/step.js'
import {ContainerError} from '../core/errors.js'
import {CONTAINER_MPS_DIRS, containerRankMpsDirs, COSTUME_ENV, LABELS, UNPRIVILEGED_MPS_DIRS} from '../core/names.js'
import {sessionEnvFileOf, stagingDirOf} from '../core/state-layout.js'
import type {HostGpu} from '../host/types.js'
import {costumeEnv, type RankDevice, ranksEnv} from '../plan/costume-env.js'
import type {ContainerPrivileges} from './container-privileges.js'
import type {ContainerLimits} from './container-limits.js'
import type {PinnedMounts} from './pin-mounts.js'
import type {ContainerSpec, ImageInfo} from './runtime.js'
import type {StageMountsParams} from './stage-mounts-step.js'
import {physicalMiBOf} from '../plan/physical-memory.js'

/** Where a BYO image gets the entrypoint and hooks bind-mounted (the same paths the cosplay image uses). */
export const COSPLAY_DIR = '/opt/gpu-cosplay'

export type ContainerOptions = {
  /** the container is created from image.id, so a tag moved meanwhile changes nothing */
  readonly image: ImageInfo
  /** the image reference the user gave or the default tag */
  readonly imageRef: string
  /** how much root the container holds (container-privileges.ts) */
  readonly privileges: ContainerPrivileges
  readonly owner: {readonly uid: number; readonly gid: number; readonly user: string}
  readonly authorizedKeys: readonly string[]
  /** host folder mounted at /workspace (absolute) */
  readonly workspace: string
  /** extra 'host:container[:ro]' binds */
  readonly volumes: readonly string[]
  /**
   * the engine acting for a member: the workspace and volume sources opened and checked as the member (pin-mounts.ts);
   * the container binds their staging binds instead of `workspace` and `volumes`. Null: bind the paths (root's own up,
   * a sandbox user's)
   */
  readonly pinned: PinnedMounts | null
  /**
   * the user's --env values: never in the container's Config.Env (the root entrypoint reads it); they reach the session
   * user's shells through user-env.ts and `gpu-cosplay exec` through session-env-file.ts
   */
  readonly env: Readonly<Record<string, string>>
  /** where the session's private files go (its --env values for exec: session-env-file.ts) */
  readonly stateDir: string
  /** their owner when root writes them for a user outside the engine; null: this process (root's, in the engine) */
  readonly privateOwner: {readonly uid: number; readonly gid: number} | null
  /** host port for sshd (0: the engine picks one; null: the image has no sshd, sessions go through docker exec) */
  readonly sshPort: number | null
  readonly sshBind: string
  readonly shmSizeBytes: number | null
  /** a member's container on a shared box (container-limits.ts); null: none */
  readonly limits: ContainerLimits | null
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

/** The steps the container part of a session runs, from the registry (`stage` only binds a member's pinned mounts). */
export type ContainerStepImpls = {readonly start: StepImpl; readonly stage: StepImpl}

/**
 * The steps `up` runs in the session's journal after its devices (UpUnderway.runSteps): with pinned mounts (the engine acting for a member) the staging
 * binds first, then the container. The journal records the user's --env values redacted (undo needs only the file they
 * are kept in, the name and the labels) and no descriptor; the live run gets the real values and the open descriptors.
 */
export function containerSteps(options: ContainerOptions, impls: ContainerStepImpls): (session: SessionRecord, live: HostGpu) => PlannedStep[] {
  const impl = impls.start
  return (session, live) => {
    const spec = containerSpecFor(session, live, options)
    const hasEnv = Object.keys(options.env).length > 0
    const envFile = sessionEnvFileOf(options.stateDir, session.owner.uid, session.name)
    const userEnv = (values: Readonly<Record<string, string>>) => (hasEnv ? {userEnv: {file: envFile, owner: options.privateOwner, values}} : {})
    const redacted = Object.fromEntries(Object.keys(options.env).map((name) => [name, REDACTED]))
    const access: ContainerAccess = {
      user: containerUserName(options.owner.user),
      uid: options.owner.uid,
      gid: options.owner.gid,
      workspace: options.workspace,
      sudo: options.privileges.sudo,
      unprivileged: options.privileges.unprivileged,
    }
    const imageRef = options.imageRef
    const withSecrets: PlannedStep['impl'] = {
      ...impl,
      apply: (ctx, _params, prior) => impl.apply(ctx, {spec, access, imageRef, ...userEnv(options.env)}, prior),
    }
    const start = {impl: withSecrets, params: {spec, access, imageRef, ...userEnv(redacted)}}
    if (!options.pinned) return [start]
    const staging = stagingOf(options.stateDir, session.name, options.pinned)
    const withSources: PlannedStep['impl'] = {
      ...impls.stage,
      apply: (ctx, _params, prior) => impls.stage.apply(ctx, {...staging.params, fds: staging.fds}, prior),
    }
    return [{impl: withSources, params: staging.params}, start]
  }
}

/** The staging of pinned sources: the journaled params (paths and what was checked) and, apart, the descriptors. */
function stagingOf(stateDir: string, session: string, pinned: PinnedMounts): {params: StageMountsParams; fds: Record<string, number>} {
  const sources = [
    {name: 'workspace', source: pinned.workspace, readOnly: false},
    ...pinned.volumes.map((v, i) => ({name: `volume-${i}`, source: v.source, readOnly: v.readOnly})),
  ]
  return {
    params: {
      dir: stagingDirOf(stateDir, session),
      entries: sources.map((s) => ({name: s.name, source: s.source.path, kind: s.source.kind, readOnly: s.readOnly, dev: s.source.dev, ino: s.source.ino})),
    },
    fds: Object.fromEntries(sources.map((s) => [s.name, s.source.fd])),
  }
}

/** The binds of a session: its pinned sources' staging paths (never the member's paths), or the paths as given. */
function bindsOf(session: string, o: ContainerOptions): string[] {
  if (!o.pinned) return [`${o.workspace}:/workspace`, ...o.volumes]
  const dir = stagingDirOf(o.stateDir, session)
  return [`${dir}/workspace:/workspace`, ...o.pinned.volumes.map((v, i) => `${dir}/volume-${i}:${v.target}${v.readOnly ? ':ro' : ''}`)]
}

export function containerSpecFor(session: SessionRecord, live: HostGpu, o: ContainerOptions): ContainerSpec {
  const plan = session.plan
  const physicalMiB = physicalMiBOf(plan, live.memoryTotalMiB)
  const device = session.mig?.uuid ?? live.uuid
  // up --count N: every rank's device in the container; the costume narrows each rank's process to its own
  const ranks = rankDevicesOf(session, live, o.privileges.unprivileged)
  const devices = ranks ? [...new Set(ranks.map((r) => r.uuid))] : [device]
  const user = containerUserName(o.owner.user)
  const privileges = o.privileges
  // gpu-cosplay's own values only: PID 1 and the root entrypoint see Config.Env, so nothing of the user's goes here
  const env: Record<string, string> = {
    ...costumeEnv(plan, {hasTf32: o.hasTf32}, physicalMiB, session.name),
    ...privileges.env,
    NVIDIA_VISIBLE_DEVICES: device,
    GPU_COSPLAY_USER: user,
    GPU_COSPLAY_UID: String(o.owner.uid),
    GPU_COSPLAY_GID: String(o.owner.gid),
    GPU_COSPLAY_SSH_PUBKEY: o.authorizedKeys.join('\n'),
    ...mpsEnv(plan, privileges.unprivileged),
    ...(ranks ? ranksEnv(ranks) : {}),
    ...(ranks && plan.mps ? {GPU_COSPLAY_MPS_DEVICES: ranks.map((r) => r.uuid).join(' ')} : {}),
  }
  const binds = bindsOf(session.name, o)
  // an image of someone else's, or one whose baked entrypoint would expect root: ours is mounted
  const byo = !o.image.isCosplayImage || privileges.unprivileged
  if (byo) {
    binds.push(`${path.join(o.packageRoot, 'docker', 'entrypoint.sh')}:${COSPLAY_DIR}/entrypoint.sh:ro`)
    binds.push(`${path.join(o.packageRoot, 'runtime-hooks')}:${COSPLAY_DIR}/hooks:ro`)
    // docker exec sees Config.Env only: put the shim first on PATH there too
    const imagePath = o.image.env.PATH ?? '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
    env.PATH = `${COSPLAY_DIR}/bin:${imagePath}`
    // every Python of an image we could not put a .pth into (a venv, conda, a site-packages root does not own) loads the
    // costume from here (runtime-hooks/site/sitecustomize.py, which then runs the image's own sitecustomize)
    env.PYTHONPATH = [`${COSPLAY_DIR}/hooks/site`, o.image.env.PYTHONPATH].filter(Boolean).join(':')
    // an entrypoint that is not root cannot link the shim into the image: Docker mounts it there instead
    if (privileges.unprivileged) binds.push(`${path.join(o.packageRoot, 'runtime-hooks', 'nvidia-smi')}:${COSPLAY_DIR}/bin/nvidia-smi:ro`)
  }
  return {
    name: containerNameFor(session.name),
    image: o.image.id,
    labels: {
      [LABELS.session]: session.name,
      [LABELS.owner]: String(o.owner.uid),
      [LABELS.target]: session.target.key,
      [LABELS.hostGpu]: String(live.index),
      [LABELS.gpuUuid]: live.uuid,
      ...(session.mig?.uuid ? {[LABELS.migUuid]: session.mig.uuid} : {}),
    },
    env,
    deviceIds: devices,
    sshPort: o.sshPort,
    sshBindAddress: o.sshBind,
    binds,
    ...(shmOf(plan, o) ? {shmSizeBytes: shmOf(plan, o)!} : {}),
    ...(o.limits?.memoryBytes ? {memoryBytes: o.limits.memoryBytes} : {}),
    ...(o.limits?.pidsLimit ? {pidsLimit: o.limits.pidsLimit} : {}),
    ...(byo ? {entrypoint: [`${COSPLAY_DIR}/entrypoint.sh`], cmd: [], init: true} : {}),
    ...(privileges.user ? {user: privileges.user} : {}),
    ...(privileges.capDrop ? {capDrop: privileges.capDrop} : {}),
    ...(privileges.capAdd ? {capAdd: privileges.capAdd} : {}),
    noNewPrivileges: privileges.noNewPrivileges,
  }
}

/** /dev/shm: what was asked, and for several ranks at least what NCCL's shared-memory transport wants (within the box's ceiling). */
function shmOf(plan: SessionRecord['plan'], o: ContainerOptions): number | null {
  if (!plan.ranks) return o.shmSizeBytes
  const wanted = Math.min(plan.ranks.shmMiB * 1024 * 1024, o.limits?.shmSizeMaxBytes ?? Number.POSITIVE_INFINITY)
  return Math.max(o.shmSizeBytes ?? 0, wanted)
}

/** up --count N: each rank's device and the MPS daemon the entrypoint starts for it; null for one device. */
function rankDevicesOf(session: SessionRecord, live: HostGpu, unprivileged: boolean): RankDevice[] | null {
  if (!session.plan.ranks) return null
  const base = unprivileged ? UNPRIVILEGED_MPS_DIRS : CONTAINER_MPS_DIRS
  return Array.from({length: session.plan.ranks.count}, (_, rank) => ({
    uuid: deviceOfRank(session, rank, live.uuid) ?? live.uuid,
    mpsPipe: session.plan.mps ? containerRankMpsDirs(rank, base).pipe : null,
  }))
}

/** The session's MPS limits for the entrypoint, which starts the daemon inside the container as the session user. */
function mpsEnv(plan: SessionRecord['plan'], unprivileged: boolean): Record<string, string> {
  if (!plan.mps) return {}
  const base = unprivileged ? UNPRIVILEGED_MPS_DIRS : CONTAINER_MPS_DIRS
  // several ranks: rank 0's daemon for whoever names no rank (the costume points each rank's process at its own)
  const dirs = plan.ranks ? containerRankMpsDirs(0, base) : base
  return {
    [COSTUME_ENV.mpsThreadPct]: String(plan.mps.activeThreadPercentage),
    [COSTUME_ENV.mpsPinnedMemLimitMiB]: String(plan.mps.pinnedMemLimitMiB),
    // in Config.Env, so `docker exec` clients find the daemon too
    CUDA_MPS_PIPE_DIRECTORY: dirs.pipe,
    CUDA_MPS_LOG_DIRECTORY: dirs.log,
  }
}

/** Who `docker exec` runs as: the account the entrypoint made, or (nothing ran as root to make one) the bare uid:gid. */
export function execUserOf(c: ContainerRecord): string {
  return c.unprivileged ? `${c.uid}:${c.gid}` : c.user
}

/** How to reach a session's container: its typed record in the session, with the session's name. */
export type SessionContainer = ContainerRecord & {readonly session: string}

export function sessionContainer(session: SessionRecord): SessionContainer {
  if (!session.container) {
    throw new ContainerError('NO_CONTAINER', `session "${session.name}" has no container (started with --no-container?)`, {
      fix: ['run your workload on the host with the variables `up --no-container` printed'],
    })
  }
  return {...session.container, session: session.name}
}
