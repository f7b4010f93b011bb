/**
 * `up` on this box: the target resolved and the flags checked before Docker or the GPU is contacted, then the plan
 * applied as a journaled session (with a container, through container/launch-session.ts) and the result shaped as
 * --json prints it and render/render-up.ts draws it. The apply and container layers load only once the flags pass.
 */
import type {ActiveSession} from '../apply/bring-up.js'
import type * as GpuBookModule from '../apply/gpu-book.js'
import {resolveTarget} from '../catalog/resolve-target.js'
import type {Target} from '../catalog/types.js'
import type {LaunchedSession} from '../container/launch-session.js'
import {type CallContext, requireRootOnSharedBox} from '../core/call-context.js'
import {CONTAINER_MPS_DIRS, containerRankMpsDirs} from '../core/names.js'
import type {Objective, Plan} from '../plan/types.js'
import type {Placement, PlanFlags} from './choose-host.js'
import {currentCatalog} from './context.js'
import {buildProgress, type ContainerFlags, containerInputFor, type Launched, type UpContainer, upContainer} from './up-container.js'
import type {RequestIo} from './request-io.js'
import type {RequestOf} from '../system/engine-protocol.js'

export type UpResult = {
  name: string
  target: {key: string; name: string}
  hostGpu: {index: number; uuid: string}
  mig: {uuid: string | null; gpuInstanceId: number | null; computeInstanceId: number | null; profile: string} | null
  clockMHz: number | null
  powerLimitW: number | null
  vramCapGiB: number
  /** per-session shaping inside the slice; null without MPS on this host */
  mps: {activeThreadPercentage: number; smCount: number; pinnedMemLimitMiB: number; pipeDirectory: string} | null
  /** which GPU-wide settings this session holds, and why */
  gpuWide: Plan['gpuWide']
  /** what a workload outside a container needs: device visibility plus the costume's variables */
  env: Record<string, string>
  plan: Plan
  warnings: string[]
  /** sessions of dead processes rolled back first, and other things worth knowing */
  notes: string[]
  /** null with --no-container */
  container: UpContainer | null
  /** only with several --host boxes: where the session went, and what every box offered */
  placement?: Placement
  /** up --count N: each rank's device, in ordinal order; absent for one device */
  ranks?: {rank: number; uuid: string; gpuIndex: number; gpuInstanceId: number | null; computeInstanceId: number | null; mpsPipe: string | null}[]
}

/** up's flags, as the command parsed them (client/up-request.ts turns them into the request) */
export type UpFlags = PlanFlags &
  ContainerFlags & {
    readonly name?: string
    readonly datasheet?: boolean
    readonly count?: number
    readonly 'no-container': boolean
    readonly ttl?: string
    readonly wait?: boolean
    readonly timeout?: string
  }

/**
 * Brings a session up on this box's GPU, with a container unless the request has none: in this process, or in the
 * engine for a member (the same function; the caller is the call context's either way).
 */
export async function upSession(call: CallContext, request: RequestOf<'up'>, io: RequestIo, version: string): Promise<UpResult> {
  const catalog = await currentCatalog()
  const target = resolveTarget(catalog, request.target)
  // Checks before Docker or the GPU is contacted.
  if (request.name !== null) {
    const {assertNameNotReserved, assertSessionName} = await import('../apply/session-names.js')
    const caller = call.caller
    assertSessionName(request.name)
    // before a --wait: a name that is another user's is refused at once, not at the first try
    assertNameNotReserved(request.name, {uid: caller.uid, user: caller.user, isRoot: caller.isRoot})
  }
  // on a shared box a member's session may not bind every tenant's clock or power, nor a privileged host port
  if (request.lockClock) requireRootOnSharedBox(call, 'up --lock-clock', "locks the clock of every tenant's GPU")
  if (request.capPower) requireRootOnSharedBox(call, 'up --cap-power', "caps the power of every tenant's GPU")
  const sshPort = request.container?.sshPort ?? null
  if (sshPort !== null && sshPort < 1024) requireRootOnSharedBox(call, `up --ssh-port ${sshPort}`, 'takes a privileged port of the host')
  const fair = await fairShareOf(call, request)
  const containerInput = request.container === null ? null : await containerInputFor(call, request.container, target, version)
  // The first look at the GPUs (`-L`, read-only), started by bin/run.js before oclif loaded, or now.
  const firstListing = (await import('./first-listing.js')).firstListing()
  const [{applyContext}, {bringUp}, {findMpsControl}] = await Promise.all([
    import('./apply-context.js'),
    import('../apply/bring-up.js'),
    import('../host/mps.js'),
  ])
  const ctx = await applyContext(call, {mutates: true})
  const progress = io.progress
  const say = (message: string) => progress?.say(message)
  const startedAt = Date.now()
  const upRequest = {
    target,
    hostGpu: request.hostGpu,
    objective: request.match as Objective,
    basis: request.basis,
    count: request.count,
    strict: request.strict,
    name: request.name,
    owner: ctx.owner,
    pid: process.pid,
    hostname: ctx.hostname,
    gpuWide: {lockClock: request.lockClock, capPower: request.capPower},
    // --no-mps plans as a host without MPS does: the plan says what the session gets, and no daemon starts
    mpsAvailable: !request.noMps && findMpsControl(process.env) !== null,
    // with a container the entrypoint runs the daemon inside it, as the session user
    mpsOnHost: containerInput ? null : {owner: {uid: ctx.user.uid, gid: ctx.user.gid}, runAsOwner: process.getuid?.() === 0 && ctx.user.uid !== 0},
    ttlMs: fair.ttlMs,
    quota: fair.quota,
  }
  const deps = {...ctx.deps, firstListing, catalog, cancel: io.cancel, onProgress: say, isRoot: ctx.isRoot}
  const where = request.hostGpu === null ? 'the GPUs the plan places them on' : `GPU ${request.hostGpu}`
  progress?.start(`Applying ${request.count ? `${request.count} x ` : ''}${target.name} to ${where}`)
  const attempt = async (): Promise<UpResult> => {
    let launched: LaunchedSession | null = null
    let active: ActiveSession
    if (containerInput) {
      const {launchSession} = await import('../container/launch-session.js')
      launched = await launchSession(upRequest, {...containerInput, stateDir: ctx.stateDir.dir, ...buildProgress(say)}, deps, {
        onWait: (what) => progress?.start(`Waiting for ${what}`),
        cancel: io.cancel.signal,
      })
      active = launched.active
    } else {
      active = await bringUp(upRequest, deps)
    }
    progress?.stop(launched ? `${Date.now() - startedAt} ms` : 'done')
    return await upResult(call, active, target, launched && {...launched, keyOwner: containerInput!.keyOwner}, startedAt)
  }
  try {
    if (!request.wait) return await attempt()
    const {waitInQueue} = await import('../apply/wait-queue.js')
    // Ctrl-C while waiting leaves the queue; nothing was changed yet
    return await waitInQueue(ctx.stateDir.dir, {
      trust: call.policy,
      who: {...ctx.owner, isRoot: ctx.isRoot},
      want: `${request.count ? `${request.count} x ` : ''}${target.name} on ${where}`,
      name: request.name,
      target: target.key,
      attempt,
      signal: io.cancel.signal,
      timeoutMs: fair.timeoutMs,
      bootId: ctx.deps.bootId,
      onProgress: (p) => progress?.start(`Waiting for a free slice: #${p.position} of ${p.waiting} in the queue`),
    })
  } catch (error) {
    progress?.stop('failed')
    throw error
  }
}

/**
 * The box's fair-share rules for this up: its end (the asked TTL, else the box's default), how long --wait may wait,
 * and the owner's quota.
 */
async function fairShareOf(call: CallContext, request: RequestOf<'up'>) {
  const [{quotaFor, sessionTtlMs, sessionPolicyOf}, {groupNamesOf}] = await Promise.all([
    import('../apply/session-policy.js'),
    import('../core/user-groups.js'),
  ])
  const config = call.box
  const user = call.caller
  return {
    ttlMs: sessionTtlMs(request.ttlMs, sessionPolicyOf(config), user.isRoot),
    timeoutMs: request.timeoutMs ?? undefined,
    quota: quotaFor({user: user.user, isRoot: user.isRoot}, config, config?.quotas ? groupNamesOf(user.user, user.uid) : []),
  }
}

/** The session as --json prints it: the slice, the settings it holds, what a workload needs, the container. */
async function upResult(call: CallContext, active: ActiveSession, target: Target, launched: Launched | null, startedAt: number): Promise<UpResult> {
  const [{costumeEnv, ranksEnv}, {rolledBackNotes}] = await Promise.all([import('../plan/costume-env.js'), import('../apply/book-store.js')])
  const device = active.session.mig?.uuid ?? active.gpuUuid
  const ranks = active.plan.ranks ? ranksOf(active, launched !== null, await import('../apply/gpu-book.js')) : null
  const mpsDirs = launched
    ? active.plan.mps
      ? active.plan.ranks
        ? containerRankMpsDirs(0)
        : CONTAINER_MPS_DIRS
      : null
    : active.mpsDaemon && {pipe: active.mpsDaemon.pipeDirectory, log: active.mpsDaemon.logDirectory}
  return {
    name: active.name,
    target: active.session.target,
    hostGpu: {index: active.gpuIndex, uuid: active.gpuUuid},
    mig: active.session.mig && {
      uuid: active.session.mig.uuid,
      gpuInstanceId: active.session.mig.gpuInstanceId,
      computeInstanceId: active.session.mig.computeInstanceId,
      profile: active.session.mig.profile,
    },
    clockMHz: active.plan.clockMHz,
    powerLimitW: active.plan.powerLimitW,
    vramCapGiB: active.plan.vramCapGiB,
    mps: active.plan.mps && mpsDirs && {...active.plan.mps, pipeDirectory: mpsDirs.pipe},
    gpuWide: active.plan.gpuWide,
    env: {
      CUDA_VISIBLE_DEVICES: device,
      NVIDIA_VISIBLE_DEVICES: device,
      ...costumeEnv(active.plan, {hasTf32: target.tf32Tflops !== null}, active.physicalMiB, active.name),
      ...(mpsDirs ? {CUDA_MPS_PIPE_DIRECTORY: mpsDirs.pipe, CUDA_MPS_LOG_DIRECTORY: mpsDirs.log} : {}),
      // several devices: all visible, and the costume narrows each rank's process to its own
      ...(ranks ? ranksEnv(ranks) : {}),
    },
    ...(ranks ? {ranks} : {}),
    plan: active.plan,
    warnings: [...active.plan.warnings],
    notes: [...active.notes, ...rolledBackNotes(active.recovered)],
    container: launched && (await upContainer(call, launched, startedAt)),
  }
}

/** up --count N: each rank's device and MPS pipe (its daemon in the container, or the one up started on the host). */
function ranksOf(active: ActiveSession, inContainer: boolean, gpuBook: typeof GpuBookModule): NonNullable<UpResult['ranks']> {
  const records = [{gpuUuid: active.gpuUuid, gpuIndex: active.gpuIndex, session: active.session}, ...active.parts]
  return Array.from({length: active.plan.ranks!.count}, (_, rank) => {
    // the record of the GPU this rank is on (a spread session has one per GPU)
    const here = records.find((r) => gpuBook.holdsRank(r.session, rank)) ?? records[0]
    const slot = gpuBook.slotOfRank(here.session, rank)
    const hostDaemon = here.session.journal.find((e) => e.kind === 'start-mps' && e.state === 'done' && ((e.params.rank as number | undefined) ?? 0) === rank)
    const mpsPipe = !active.plan.mps ? null : inContainer ? containerRankMpsDirs(rank).pipe : ((hostDaemon?.params.pipeDirectory as string | undefined) ?? null)
    return {
      rank,
      uuid: gpuBook.deviceOfRank(active.session, rank, active.gpuUuid) ?? here.gpuUuid,
      gpuIndex: here.gpuIndex,
      gpuInstanceId: slot?.gpuInstanceId ?? null,
      computeInstanceId: slot?.computeInstanceId ?? null,
      mpsPipe,
    }
  })
}
