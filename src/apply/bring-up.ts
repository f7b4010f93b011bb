import type {Catalog, Target} from '../catalog/types.js'
import {StateError} from '../core/errors.js'
import type {GpuControl} from '../host/gpu-control.js'
import {pickGpu} from '../host/pick-gpu.js'
import type {HostGpu} from '../host/types.js'
import {planCosplay} from '../plan/plan-cosplay.js'
import {hostModelFor, planHostFromProbe} from '../plan/plan-host.js'
import type {Objective, Plan, PlanConstraints} from '../plan/types.js'
import {type Cancellation, recoverAbandoned, runSteps, stepContext, unwindSession} from './engine.js'
import {bookPath, emptyBook, type GpuBook, readBook, type SessionRecord, writeBook} from './gpu-book.js'
import {withGpuLock} from './gpu-lock.js'
import {forgetIfRebooted} from './reboot.js'
import {assertSessionName, releaseName, reserveAutoName, reserveName} from './session-names.js'
import {createComputeInstance, createGpuInstance} from './steps/instance-steps.js'
import {enableMig, lockClocks, setPersistence, setPowerLimit} from './steps/lease-steps.js'
import type {PlannedStep} from './steps/step.js'

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
  readonly bootId: string | null
  /** steps of later layers (the container), run after the GPU is ready, inside the same journal */
  readonly extraSteps?: (session: SessionRecord, live: HostGpu) => PlannedStep[]
}

export type UpDeps = {
  readonly gpu: GpuControl
  readonly stateDir: string
  readonly catalog: Catalog
  readonly cancel: Cancellation
  readonly onProgress?: (message: string) => void
}

export type ActiveSession = {
  readonly name: string
  readonly gpuUuid: string
  readonly gpuIndex: number
  readonly session: SessionRecord
  readonly plan: Plan
  /** memory of the slice (or GPU) the session runs on, in MiB */
  readonly physicalMiB: number
  /** sessions of dead processes this call rolled back first */
  readonly recovered: readonly string[]
  readonly notes: readonly string[]
}

/** Applies a plan to one GPU as a journaled session. On any failure, or Ctrl-C, it undoes what it did. */
export async function bringUp(request: UpRequest, deps: UpDeps): Promise<ActiveSession> {
  if (request.name !== null) assertSessionName(request.name)
  const firstLook = pickGpu(await deps.gpu.probe(), request.hostGpu)
  const claim = {gpuUuid: firstLook.uuid, pid: request.pid, hostname: request.hostname}
  const name = request.name ?? reserveAutoName(deps.stateDir, `${request.owner.user}-${request.target.key}`, claim)
  if (request.name !== null && !reserveName(deps.stateDir, name, claim)) {
    throw new StateError('SESSION_EXISTS', `a session named "${name}" already exists`, {exit: 2, fix: ['pick another --name', 'see them: gpu-cosplay ps']})
  }
  try {
    return await withGpuLock(deps.stateDir, firstLook.uuid, () => bringUpLocked(request, deps, name, firstLook))
  } catch (error) {
    releaseName(deps.stateDir, name)
    throw error
  }
}

async function bringUpLocked(request: UpRequest, deps: UpDeps, name: string, firstLook: HostGpu): Promise<ActiveSession> {
  const file = bookPath(deps.stateDir, firstLook.uuid)
  const book: GpuBook = readBook(file) ?? emptyBook({uuid: firstLook.uuid, name: firstLook.name}, request.bootId)
  const persist = () => writeBook(file, book)
  let live = await freshLook(deps.gpu, firstLook.uuid)
  const notes = forgetIfRebooted(book, request.bootId)
  const {recovered, notes: recoveryNotes} = await recoverAbandoned(deps.gpu, book, live, persist)
  notes.push(...recoveryNotes)
  if (recovered.length > 0) live = await freshLook(deps.gpu, firstLook.uuid)

  const plan = planUnderLeases(request, deps.catalog, book, live)
  const session: SessionRecord = {
    name,
    owner: {...request.owner},
    pid: request.pid,
    hostname: request.hostname,
    createdAt: new Date().toISOString(),
    phase: 'starting',
    target: {key: request.target.key, name: request.target.name},
    plan: plan as unknown as Record<string, unknown>,
    mig: plan.mig && {profile: plan.mig.profile, profileId: plan.mig.profileId, gpuInstanceId: null, computeInstanceId: null, uuid: null},
    container: null,
    journal: [],
  }
  book.sessions[name] = session
  book.bootId = request.bootId
  persist()

  const ctx = stepContext(deps.gpu, book, session, live)
  try {
    await runSteps(ctx, persist, gpuSteps(plan), deps.cancel)
    if (session.mig) session.mig.uuid = await migUuidOf(deps.gpu, ctx.live, session)
    persist()
    if (request.extraSteps) await runSteps(ctx, persist, request.extraSteps(session, ctx.live), deps.cancel)
    session.phase = 'active'
    persist()
  } catch (error) {
    deps.onProgress?.('undoing what this session changed')
    try {
      await unwindSession(ctx, persist)
      delete book.sessions[name]
      persist()
    } catch (undoError) {
      // The journal keeps what could not be undone; `recover` retries it. Report the original failure.
      notes.push(`could not undo everything (${(undoError as Error).message}); run gpu-cosplay recover`)
    }
    if (error instanceof Error && notes.length > 0) (error as Error & {notes?: string[]}).notes = notes
    throw error
  }

  return {
    name,
    gpuUuid: firstLook.uuid,
    gpuIndex: ctx.live.index,
    session,
    plan,
    physicalMiB: plan.mig ? Math.round(plan.mig.memoryGiB * 1024) : (ctx.live.memoryTotalMiB ?? Math.round(plan.vramCapGB * 1024)),
    recovered,
    notes: [...notes, ...ctx.notes],
  }
}

async function freshLook(gpu: GpuControl, uuid: string): Promise<HostGpu> {
  const found = (await gpu.probe()).gpus.find((g) => g.uuid === uuid)
  if (!found) throw new StateError('GPU_GONE', `GPU ${uuid} is no longer listed by nvidia-smi`)
  return found
}

/** Plans against the live GPU, living with the GPU-wide values other sessions hold (or failing, with --strict). */
function planUnderLeases(request: UpRequest, catalog: Catalog, book: GpuBook, live: HostGpu): Plan {
  const model = hostModelFor(catalog, live)
  assertMigUsable(live, model.mig !== null)
  const host = planHostFromProbe(live, model)
  const constraints: {-readonly [K in keyof PlanConstraints]: PlanConstraints[K]} = {}
  if (book.leases.clocks) constraints.clockMHz = book.leases.clocks.value as number | null
  if (book.leases['power-limit']) constraints.powerLimitW = book.leases['power-limit'].value as number
  if (request.strict && (constraints.clockMHz !== undefined || constraints.powerLimitW !== undefined)) {
    const wanted = planCosplay(request.target, host, request.objective)
    const conflicts: string[] = []
    if (constraints.clockMHz !== undefined && constraints.clockMHz !== wanted.clockMHz) {
      conflicts.push(`clocks ${show(constraints.clockMHz)} (wanted ${show(wanted.clockMHz)})`)
    }
    if (constraints.powerLimitW !== undefined && constraints.powerLimitW !== wanted.powerLimitW) {
      conflicts.push(`power limit ${constraints.powerLimitW} W (wanted ${wanted.powerLimitW} W)`)
    }
    if (conflicts.length > 0) {
      const holders = Object.keys(book.sessions).join(', ')
      throw new StateError('LEASE_CONFLICT', `GPU ${live.index} is shared with ${holders}, who hold ${conflicts.join(' and ')}`, {
        fix: ['drop --strict to share the values in force (the plan is recomputed with them)', 'or use another GPU: --host-gpu N'],
      })
    }
  }
  return planCosplay(request.target, host, request.objective, constraints)
}

function assertMigUsable(live: HostGpu, isMigModel: boolean): void {
  if (!isMigModel || !live.migMode || live.migMode.current === 'enabled') return
  if (live.migMode.pending === 'enabled') {
    throw new StateError('MIG_PENDING_RESET', `GPU ${live.index}: MIG mode is pending a GPU reset, so no MIG instance can be made`, {
      fix: ['an administrator must reset the idle GPU (nvidia-smi -i N -r) or reboot', 'or use another GPU: --host-gpu N'],
    })
  }
  if (live.processes.length > 0) {
    const pids = live.processes.map((p) => p.pid).join(', ')
    throw new StateError('GPU_BUSY', `GPU ${live.index} has MIG mode off and ${live.processes.length} process(es) use it (pid ${pids}); MIG mode can only be turned on when it is idle`, {
      fix: ['stop those processes, or use another GPU: --host-gpu N'],
    })
  }
}

function show(clockMHz: number | null): string {
  return clockMHz === null ? 'unlocked' : `locked at ${clockMHz} MHz`
}

function gpuSteps(plan: Plan): PlannedStep[] {
  const steps: PlannedStep[] = [{impl: setPersistence, params: {value: true}}]
  if (plan.mig) {
    steps.push(
      {impl: enableMig, params: {value: true}},
      {impl: createGpuInstance, params: {profile: plan.mig.profile, profileId: plan.mig.profileId}},
      {impl: createComputeInstance, params: {}},
    )
  }
  steps.push({impl: lockClocks, params: {value: plan.clockMHz}}, {impl: setPowerLimit, params: {value: plan.powerLimitW}})
  return steps
}

async function migUuidOf(gpu: GpuControl, live: HostGpu, session: SessionRecord): Promise<string> {
  const devices = await gpu.migDevices()
  const mine = devices.find(
    (d) => d.gpuIndex === live.index && d.gpuInstanceId === session.mig?.gpuInstanceId && d.computeInstanceId === session.mig?.computeInstanceId,
  )
  if (!mine) {
    throw new StateError('MIG_UUID_NOT_FOUND', `GPU ${live.index}: the new instance (GI ${session.mig?.gpuInstanceId}, CI ${session.mig?.computeInstanceId}) is not listed by nvidia-smi -L`)
  }
  return mine.uuid
}
