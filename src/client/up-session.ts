/**
 * `up` on this box: the target resolved and the flags checked before Docker or the GPU is contacted, then the plan
 * applied as a journaled session (with a container, through container/launch-session.ts) and the result shaped as
 * --json prints it and render/render-up.ts draws it. The apply and container layers load only once the flags pass.
 */
import type {ActiveSession} from '../apply/bring-up.js'
import {resolveTarget} from '../catalog/resolve-target.js'
import type {Target} from '../catalog/types.js'
import type {LaunchedSession} from '../container/launch-session.js'
import {invokingUser, requireRootOnSharedBox} from '../core/invoking-user.js'
import {CONTAINER_MPS_DIRS} from '../core/names.js'
import type {Objective, Plan} from '../plan/types.js'
import type {Placement, PlanFlags} from './choose-host.js'
import {currentCatalog} from './context.js'
import type {Spinner} from './progress.js'
import {buildProgress, type ContainerFlags, containerInputFrom, type Launched, type UpContainer, upContainer} from './up-container.js'

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
}

/** up's flags, as the command parsed them */
export type UpFlags = PlanFlags &
  ContainerFlags & {
    readonly name?: string
    readonly 'no-container': boolean
    readonly ttl?: string
    readonly wait?: boolean
    readonly timeout?: string
  }

/** How up shows its work on stderr: a spinner, and lines (Ctrl-C, the image build); null under --json. */
export type UpProgress = Spinner & {say(line: string): void}

/** Brings a session for `gpu` up on this box's GPU, with a container unless --no-container. */
export async function upSession(gpu: string, flags: UpFlags, version: string, progress: UpProgress | null): Promise<UpResult> {
  const catalog = await currentCatalog()
  const target = resolveTarget(catalog, gpu)
  // Flags are checked before Docker or the GPU is contacted.
  if (flags.name !== undefined) (await import('../apply/session-names.js')).assertSessionName(flags.name)
  // on a shared box a member's session may not bind every tenant's clock or power, nor a privileged host port
  if (flags['lock-clock']) requireRootOnSharedBox('up --lock-clock', "locks the clock of every tenant's GPU")
  if (flags['cap-power']) requireRootOnSharedBox('up --cap-power', "caps the power of every tenant's GPU")
  if ((flags['ssh-port'] ?? 1024) < 1024) requireRootOnSharedBox(`up --ssh-port ${flags['ssh-port']}`, 'takes a privileged port of the host')
  const fair = await fairShareOf(flags)
  const containerInput = flags['no-container'] ? null : await containerInputFrom(flags, target, version)
  // The first look at the GPUs (`-L`, read-only), started by bin/run.js before oclif loaded, or now.
  const firstListing = (await import('./first-listing.js')).firstListing()
  const [{applyContext, cancelOnSignals}, {bringUp}, {findMpsControl}] = await Promise.all([
    import('./apply-context.js'),
    import('../apply/bring-up.js'),
    import('../host/mps.js'),
  ])
  const ctx = await applyContext({mutates: true})
  const say = (message: string) => progress?.say(message)
  const startedAt = Date.now()
  const cancel = cancelOnSignals(say)
  const request = {
    target,
    hostGpu: flags['host-gpu'],
    objective: flags.match as Objective,
    strict: flags.strict,
    name: flags.name ?? null,
    owner: ctx.owner,
    pid: process.pid,
    hostname: ctx.hostname,
    gpuWide: {lockClock: flags['lock-clock'], capPower: flags['cap-power']},
    // --no-mps plans as a host without MPS does: the plan says what the session gets, and no daemon starts
    mpsAvailable: !flags['no-mps'] && findMpsControl(process.env) !== null,
    // with a container the entrypoint runs the daemon inside it, as the session user
    mpsOnHost: containerInput ? null : {owner: {uid: ctx.user.uid, gid: ctx.user.gid}, runAsOwner: process.getuid?.() === 0 && ctx.user.uid !== 0},
    ttlMs: fair.ttlMs,
    quota: fair.quota,
  }
  const deps = {...ctx.deps, firstListing, catalog, cancel, onProgress: say, isRoot: ctx.isRoot}
  progress?.start(`Applying ${target.name} to GPU ${flags['host-gpu']}`)
  const attempt = async (): Promise<UpResult> => {
    let launched: LaunchedSession | null = null
    let active: ActiveSession
    if (containerInput) {
      const {launchSession} = await import('../container/launch-session.js')
      launched = await launchSession(request, {...containerInput, stateDir: ctx.stateDir.dir, ...buildProgress(say)}, deps, {
        onWait: (what) => {
          cancel.dispose()
          progress?.start(`Waiting for ${what}`)
        },
      })
      active = launched.active
    } else {
      active = await bringUp(request, deps)
    }
    progress?.stop(launched ? `${Date.now() - startedAt} ms` : 'done')
    return await upResult(active, target, launched && {...launched, keyOwner: containerInput!.keyOwner}, startedAt)
  }
  try {
    if (!flags.wait) return await attempt()
    const {waitInQueue} = await import('../apply/wait-queue.js')
    // Ctrl-C while waiting leaves the queue; nothing was changed yet
    const left = new AbortController()
    const leave = () => left.abort()
    process.on('SIGINT', leave).on('SIGTERM', leave)
    try {
      return await waitInQueue(ctx.stateDir.dir, {
        who: {...ctx.owner, isRoot: ctx.isRoot},
        want: `${target.name} on GPU ${flags['host-gpu']}`,
        name: flags.name ?? null,
        target: target.key,
        attempt,
        signal: left.signal,
        timeoutMs: fair.timeoutMs,
        bootId: ctx.deps.bootId,
        onProgress: (p) => progress?.start(`Waiting for a free slice: #${p.position} of ${p.waiting} in the queue`),
      })
    } finally {
      process.off('SIGINT', leave).off('SIGTERM', leave)
    }
  } catch (error) {
    progress?.stop('failed')
    throw error
  } finally {
    cancel.dispose()
  }
}

/**
 * The box's fair-share rules for this up (issue 20): its end (--ttl, else the box's default), how long --wait may
 * wait, and the owner's quota. Bad durations fail here, before Docker or the GPU is contacted.
 */
async function fairShareOf(flags: UpFlags) {
  const [{engineBoxConfig}, {quotaFor, resolveTtlMs, sessionPolicyOf}, {parseDuration}, {groupNamesOf}] = await Promise.all([
    import('../core/box-config.js'),
    import('../core/session-policy.js'),
    import('../core/duration.js'),
    import('../core/user-groups.js'),
  ])
  const config = engineBoxConfig()
  const user = invokingUser()
  return {
    ttlMs: resolveTtlMs(flags.ttl, sessionPolicyOf(config), user.isRoot),
    timeoutMs: flags.timeout === undefined ? undefined : parseDuration(flags.timeout, '--timeout'),
    quota: quotaFor({user: user.user, isRoot: user.isRoot}, config, config?.quotas ? groupNamesOf(user.user, user.uid) : []),
  }
}

/** The session as --json prints it: the slice, the settings it holds, what a workload needs, the container. */
async function upResult(active: ActiveSession, target: Target, launched: Launched | null, startedAt: number): Promise<UpResult> {
  const [{costumeEnv}, {rolledBackNotes}] = await Promise.all([import('../plan/costume-env.js'), import('../apply/book-store.js')])
  const device = active.session.mig?.uuid ?? active.gpuUuid
  const mpsDirs = launched
    ? active.plan.mps
      ? CONTAINER_MPS_DIRS
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
    },
    plan: active.plan,
    warnings: [...active.plan.warnings],
    notes: [...active.notes, ...rolledBackNotes(active.recovered)],
    container: launched && (await upContainer(launched, startedAt)),
  }
}
