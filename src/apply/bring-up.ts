import type {Catalog, Target} from '../catalog/types.js'
import {StateError} from '../core/errors.js'
import type {Quota} from '../core/session-policy.js'
import type {GpuControl} from '../host/gpu-control.js'
import type {ListGpus} from '../host/parse-list-gpus.js'
import {pickGpu} from '../host/pick-gpu.js'
import type {HostGpu} from '../host/types.js'
import {hostModelFor, planHostFromProbe} from '../plan/plan-host.js'
import {planOnGpu} from '../plan/plan-on-gpu.js'
import {planRanks} from '../plan/plan-ranks.js'
import type {GpuWideRequest, Objective, Plan, PlanBasis} from '../plan/types.js'
import type {PlanCalibration} from '../plan/measured-throughput.js'
import {readCalibration} from '../host/calibration-file.js'
import {type BookStoreDeps, type OpenBook, withBook} from './book-store.js'
import {type Cancellation, completeOrUnwind, runSteps} from './engine.js'
import {type GpuBook, heldSettings, migSlotsOf, newSessionBase, type SessionRecord} from './gpu-book.js'
import {assertWithinQuota, holdingOf, slicesOf, withQuotaLock} from './quota-check.js'
import {assertNameNotReserved, assertSessionName, releaseName, reserveAutoName, reserveName, type UserLookup} from './session-names.js'
import {createGpuInstance} from './steps/instance-steps.js'
import {enableMig, lockClocks, setPersistence, setPowerLimit} from './steps/lease-steps.js'
import {mpsStepFor, type StartMpsParams} from './steps/mps-step.js'
import {stepFor} from './steps/registry.js'
import type {PlannedStep} from './steps/step.js'
import {physicalMiBOf} from '../plan/physical-memory.js'

export type Owner = {readonly uid: number; readonly user: string}

export type UpRequest = {
  readonly target: Target
  readonly hostGpu: number
  readonly objective: Objective
  /** fail instead of sharing GPU-wide settings another session holds at a different value */
  readonly strict: boolean
  readonly name: string | null
  readonly owner: Owner
  readonly pid: number
  readonly hostname: string
  /** GPU-wide settings a session on a slice takes anyway, because the user asked */
  readonly gpuWide?: GpuWideRequest
  /** an MPS control binary is on this host: the plan shapes the session with it */
  readonly mpsAvailable: boolean
  /** start the session's MPS daemon on the host (no container; with one, its entrypoint runs the daemon) */
  readonly mpsOnHost: {readonly owner: {readonly uid: number; readonly gid: number}; readonly runAsOwner: boolean} | null
  /**
   * What must be settled before the GPU's first change (the container's engine, image and key). Started once the
   * locked read of the GPU is under way, so the two overlap; awaited after planning, before the session is recorded.
   */
  readonly beforeChanges?: () => Promise<void>
  /** steps of later layers (the container), run once the instance exists (before the GPU-wide settings), in the same journal */
  readonly extraSteps?: (session: SessionRecord, live: HostGpu) => PlannedStep[]
  /** what the plan matches: what the target measures (default) or its datasheet (up --datasheet) */
  readonly basis?: PlanBasis
  /** the session ends by itself this long after it is recorded (core/session-policy.ts resolveTtlMs); null or absent: never */
  readonly ttlMs?: number | null
  /** the owner's quota (core/session-policy.ts quotaFor); null or absent: none (root, or a box without quotas) */
  readonly quota?: Quota | null
  /** up --count N: N devices of the target on this GPU (plan/plan-ranks.ts); absent or 1: one */
  readonly count?: number
}

export type UpDeps = BookStoreDeps & {
  readonly catalog: Catalog
  readonly cancel: Cancellation
  readonly onProgress?: (message: string) => void
  /** the first look (`nvidia-smi -L`) when the caller started it early, to hide its latency behind start-up */
  readonly firstListing?: Promise<ListGpus>
  /** the caller may act for others (invokingUser().isRoot); absent: when the owner is uid 0 */
  readonly isRoot?: boolean
  /** users by name, for the names a member may not take (session-names.ts); absent: /etc/passwd */
  readonly userIdOf?: UserLookup
}

export type ActiveSession = {
  readonly name: string
  readonly gpuUuid: string
  readonly gpuIndex: number
  readonly session: SessionRecord
  readonly plan: Plan
  /** memory of the slice (or GPU) the session runs on, in MiB */
  readonly physicalMiB: number
  /** the session's MPS daemon on the host, when up started one */
  readonly mpsDaemon: {readonly pipeDirectory: string; readonly logDirectory: string} | null
  /** sessions of dead processes this call rolled back first */
  readonly recovered: readonly string[]
  readonly notes: readonly string[]
}

/** Applies a plan to one GPU as a journaled session. On any failure, or Ctrl-C, it undoes what it did. */
export async function bringUp(request: UpRequest, deps: UpDeps): Promise<ActiveSession> {
  if (request.name !== null) {
    assertSessionName(request.name)
    assertNameNotReserved(request.name, {...request.owner, isRoot: deps.isRoot ?? request.owner.uid === 0}, deps.userIdOf)
  }
  // A first look names the GPU (`-L`: one cheap call); everything else is read under its lock.
  const listed = await (deps.firstListing ?? deps.gpu.listGpus())
  const gpu = pickGpu(listed, request.hostGpu)
  const migUuidsBefore = new Set(listed.migDevices.filter((d) => d.gpuIndex === gpu.index).map((d) => d.uuid))
  const claim = {gpuUuid: gpu.uuid, pid: request.pid, hostname: request.hostname}
  const name = request.name ?? reserveAutoName(deps.stateDir, `${request.owner.user}-${request.target.key}`, claim)
  if (request.name !== null && !reserveName(deps.stateDir, name, claim)) {
    throw new StateError('SESSION_EXISTS', `a session named "${name}" already exists`, {exit: 2, fix: ['pick another --name', 'see them: gpu-cosplay ps']})
  }
  let settled: Promise<void> = Promise.resolve()
  const onReadStarted = request.beforeChanges
    ? () => {
        // a macrotask later: the read's nvidia-smi is spawned first, then the gate's module loading runs beside it
        settled = new Promise<void>((resolve) => setImmediate(resolve)).then(request.beforeChanges)
        settled.catch(() => undefined) // awaited by bringUpLocked; unobserved when planning fails first
      }
    : undefined
  try {
    const migExpected = migUuidsBefore.size > 0
    return await withBook(deps, gpu, (open) => bringUpLocked(request, deps, name, open, migUuidsBefore, () => settled), {migExpected, onReadStarted})
  } catch (error) {
    releaseName(deps.stateDir, name)
    throw error
  }
}

async function bringUpLocked(
  request: UpRequest,
  deps: UpDeps,
  name: string,
  open: OpenBook,
  migUuidsBefore: ReadonlySet<string>,
  beforeChanges: () => Promise<void>,
): Promise<ActiveSession> {
  const {book, persist} = open
  const model = hostModelFor(deps.catalog, open.live)
  // the GPU's calibration moves the host's measured rates, as it does for `plan --host-gpu` (the same plan)
  const calibration = calibrationOf(deps.stateDir, model.key, open.live.driverVersion ?? null)
  const host = planHostFromProbe(open.live, model, {mpsAvailable: request.mpsAvailable, calibration})
  const quota = request.quota ?? null
  // a first count before planning: over quota is the answer even when no slot is free (and nothing waits in a queue for it)
  if (quota) assertWithinQuota(quota, holdingOf(deps.stateDir, request.owner.uid, book), 0)
  const options = {strict: request.strict, ...request.gpuWide, basis: request.basis}
  const count = request.count ?? 1
  // N devices are planned as one would be, and refused (RANKS_DO_NOT_FIT) where N do not fit on this GPU now
  const plan =
    count > 1
      ? planRanks(request.target, [{host, held: heldSettings(book)}], request.objective, count, options)
      : planOnGpu(request.target, host, request.objective, heldSettings(book), options)
  await beforeChanges()
  const base = newSessionBase(name, request)
  const slot = () => plan.mig && {profile: plan.mig.profile, profileId: plan.mig.profileId, gpuInstanceId: null, computeInstanceId: null, uuid: null}
  const session: SessionRecord = {
    ...base,
    target: {key: request.target.key, name: request.target.name},
    plan,
    mig: slot(),
    ...(count > 1 && plan.mig ? {moreSlices: Array.from({length: count - 1}, () => slot()!)} : {}),
    // a lifetime counted from the moment the session is recorded as made (its createdAt), to the millisecond
    ...(request.ttlMs ? {expiresAt: new Date(Date.parse(base.createdAt) + request.ttlMs).toISOString()} : {}),
  }
  const record = async () => {
    if (quota) assertWithinQuota(quota, holdingOf(deps.stateDir, request.owner.uid, book), slicesOf(session))
    book.sessions[name] = session
    persist()
  }
  // counted and recorded under the box's quota lock: a concurrent up on another GPU sees this session or waits
  await (quota ? withQuotaLock(deps.stateDir, record) : record())

  const ctx = open.contextFor(session)
  const notes = [...open.notes]
  await completeOrUnwind(
    ctx,
    persist,
    deps,
    async () => {
      await runSteps(ctx, persist, instanceSteps(plan, count), deps.cancel)
      await nameSlots(deps.gpu, ctx.live, session, book, migUuidsBefore)
      persist()
      if (plan.mps && request.mpsOnHost) {
        const {owner, runAsOwner} = request.mpsOnHost
        const impl = stepFor(deps.steps, 'start-mps')
        const daemons = Array.from({length: count}, (_, rank) => mpsStepFor(impl, plan.mps!, deps.stateDir, name, owner, runAsOwner, rank))
        await runSteps(ctx, persist, daemons, deps.cancel)
      }
      if (request.extraSteps) await runSteps(ctx, persist, request.extraSteps(session, ctx.live), deps.cancel)
      // Last, because nothing before depends on them: a container's entrypoint and sshd start while these calls run.
      await runSteps(ctx, persist, gpuWideSteps(plan), deps.cancel)
    },
    notes,
  )

  return {
    name,
    gpuUuid: book.gpu.uuid,
    gpuIndex: ctx.live.index,
    session,
    plan,
    physicalMiB: physicalMiBOf(plan, ctx.live.memoryTotalMiB),
    mpsDaemon: mpsDaemonOf(session),
    recovered: open.recovered,
    notes: [...notes, ...ctx.notes],
  }
}

function mpsDaemonOf(session: SessionRecord): ActiveSession['mpsDaemon'] {
  const entry = session.journal.find((e) => e.kind === 'start-mps' && e.state === 'done')
  if (!entry) return null
  const params = entry.params as StartMpsParams
  return {pipeDirectory: params.pipeDirectory, logDirectory: params.logDirectory}
}

/** What the session runs on: persistence, then (on a slice) MIG mode and the instance (one per rank, --count N). */
function instanceSteps(plan: Plan, count: number): PlannedStep[] {
  const steps: PlannedStep[] = [{impl: setPersistence, params: {value: true}}]
  if (plan.mig) {
    const {profile, profileId} = plan.mig
    steps.push(
      {impl: enableMig, params: {value: true}},
      ...Array.from({length: count}, (_, rank) => ({
        impl: createGpuInstance,
        params: {profile, profileId, withComputeInstance: true, ...(rank > 0 ? {rank} : {})},
      })),
    )
  }
  return steps
}

/** GPU-wide knobs bind every tenant: only a session that holds the whole GPU (or asked) takes them. */
function gpuWideSteps(plan: Plan): PlannedStep[] {
  const steps: PlannedStep[] = []
  if (plan.gpuWide.clockLock) steps.push({impl: lockClocks, params: {value: plan.clockMHz}})
  if (plan.gpuWide.powerLimit && plan.powerLimitW !== null) steps.push({impl: setPowerLimit, params: {value: plan.powerLimitW}})
  return steps
}

/**
 * The new instances' MIG UUIDs. `-L` names MIG devices by device index, not GI/CI, but under the lock the one
 * UUID that was not there before and belongs to no other session can only be a lone new instance's (one call).
 * Otherwise (several ranks, or an administrator made one meanwhile), `-L` is joined with the default table
 * (two calls).
 */
async function nameSlots(gpu: GpuControl, live: HostGpu, session: SessionRecord, book: GpuBook, before: ReadonlySet<string>): Promise<void> {
  const slots = migSlotsOf(session)
  if (slots.length === 0) return
  const others = new Set(
    Object.values(book.sessions)
      .filter((s) => s.name !== session.name)
      .flatMap((s) => migSlotsOf(s).map((slot) => slot.uuid))
      .filter((u): u is string => typeof u === 'string'),
  )
  const fresh = (await gpu.listGpus(live.index)).migDevices.filter((d) => !before.has(d.uuid) && !others.has(d.uuid))
  if (slots.length === 1 && fresh.length === 1) {
    slots[0].uuid = fresh[0].uuid
    return
  }
  const devices = await gpu.migDevices()
  for (const slot of slots) {
    const mine = devices.find((d) => d.gpuIndex === live.index && d.gpuInstanceId === slot.gpuInstanceId && d.computeInstanceId === slot.computeInstanceId)
    if (!mine) {
      throw new StateError(
        'MIG_UUID_NOT_FOUND',
        `GPU ${live.index}: the new instance (GI ${slot.gpuInstanceId}, CI ${slot.computeInstanceId}) is not listed by nvidia-smi -L`,
      )
    }
    slot.uuid = mine.uuid
  }
}

/** The calibration `calibrate` left for this host model and driver (a stale or damaged one fails, as in `plan`). */
function calibrationOf(stateDir: string, model: string, driver: string | null): PlanCalibration | null {
  if (driver === null) return null
  const found = readCalibration(stateDir, model, driver)
  return found && {fractions: found.calibration.fractions, file: found.file, driver: found.calibration.driver}
}
