import type {Catalog, Target} from '../catalog/types.js'
import {isCosplayError, StateError} from '../core/errors.js'
import type {StatePolicy} from '../core/state-policy.js'
import type {Quota} from './session-policy.js'
import type {GpuControl} from '../host/gpu-control.js'
import type {ListGpus} from '../host/parse-list-gpus.js'
import {pickGpu} from '../host/pick-gpu.js'
import type {HostGpu} from '../host/types.js'
import {hostModelFor, planHostFromProbe} from '../plan/plan-host.js'
import {planOnGpu} from '../plan/plan-on-gpu.js'
import {placeRanks} from '../plan/plan-ranks.js'
import type {GpuWideRequest, Objective, Plan, PlanBasis} from '../plan/types.js'
import type {PlanCalibration} from '../plan/measured-throughput.js'
import {readCalibration} from './calibration-file.js'
import {type BookStoreDeps, type HeldBooks, type OpenBook, openBooks, recordedNames} from './book-store.js'
import {type BookedRecord, type Cancellation, markActive, runSteps, unwindRecords} from './journal.js'
import {deviceOfRank, type GpuBook, heldSettings, migSlotsOf, newSessionBase, type SessionRecord} from './gpu-book.js'
import {assertWithinQuota, holdingOf, slicesOf, withQuotaLock} from './quota-check.js'
import {assertNameNotReserved, assertSessionName, releaseName, reserveAutoName, reserveName, type UserLookup} from './session-names.js'
import {createGpuInstance} from './steps/instance-steps.js'
import {enableMig, lockClocks, setPersistence, setPowerLimit} from './steps/lease-steps.js'
import {mpsStepFor, type StartMpsParams} from './steps/mps-step.js'
import {stepFor} from './steps/registry.js'
import type {PlannedStep, StepContext} from './steps/step.js'
import {physicalMiBOf} from '../plan/physical-memory.js'

export type Owner = {readonly uid: number; readonly user: string}

export type UpRequest = {
  readonly target: Target
  /** the GPU's index; null: up --count N goes where the planner places the ranks, over several GPUs where needed */
  readonly hostGpu: number | null
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
  /** what the plan matches: what the target measures (default) or its datasheet (up --datasheet) */
  readonly basis?: PlanBasis
  /** the session ends by itself this long after it is recorded (session-policy.ts resolveTtlMs); null or absent: never */
  readonly ttlMs?: number | null
  /** the owner's quota (session-policy.ts quotaFor); null or absent: none (root, or a box without quotas) */
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
  /** the caller may act for others (the call context's caller.isRoot); absent: when the owner is uid 0 */
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
  /** up --count N spread over several GPUs: the records on the GPUs after the first (rank 0's) */
  readonly parts: readonly {readonly gpuUuid: string; readonly gpuIndex: number; readonly session: SessionRecord}[]
  /** sessions of dead processes this call rolled back first */
  readonly recovered: readonly string[]
  readonly notes: readonly string[]
}

/**
 * Applies a plan as a journaled session: on one GPU, or (up --count N with no --host-gpu) on the GPUs the planner
 * places the ranks on, all or nothing. On any failure, or Ctrl-C, it undoes what it did. These are `up`'s phases on
 * the GPU side, in order; container/launch-session.ts runs the same phases with the container's work between them.
 */
export async function bringUp(request: UpRequest, deps: UpDeps): Promise<ActiveSession> {
  return await underway(request, deps, async (up) => {
    await up.read()
    await up.plan()
    await up.record()
    await up.makeDevices()
    await up.setGpuWide()
    return up.activate()
  })
}

/**
 * `phases` run on a session begun by beginUp: what they did undone if they throw (undo), and the locks and, unless the
 * session came up, the name let go of in any case (end).
 */
export async function underway<T>(request: UpRequest, deps: UpDeps, phases: (up: UpUnderway) => Promise<T>): Promise<T> {
  const up = await beginUp(request, deps)
  try {
    return await phases(up)
  } catch (error) {
    await up.undo(error)
    throw error
  } finally {
    await up.end()
  }
}

/**
 * The first phase of `up`: the name checked and claimed, and the GPUs it may go to named by a first look (`-L`: one
 * cheap call). Nothing is locked yet: everything else is read under the GPUs' locks (read), held until end().
 */
export async function beginUp(request: UpRequest, deps: UpDeps): Promise<UpUnderway> {
  if (request.name !== null) {
    assertSessionName(request.name)
    assertNameNotReserved(request.name, {...request.owner, isRoot: deps.isRoot ?? request.owner.uid === 0}, deps.userIdOf)
  }
  const listed = await (deps.firstListing ?? deps.gpu.listGpus())
  const count = request.count ?? 1
  const gpus = count > 1 && request.hostGpu === null && listed.gpus.length > 1 ? listed.gpus : [pickGpu(listed, request.hostGpu ?? 0)]
  const migBefore = new Map(gpus.map((g) => [g.uuid, new Set(listed.migDevices.filter((d) => d.gpuIndex === g.index).map((d) => d.uuid))]))
  // a spread session's GPUs are known once it is planned: its claim names none
  const claim = {gpuUuid: gpus.length > 1 ? null : gpus[0].uuid, pid: request.pid, hostname: request.hostname}
  const name = request.name ?? reserveAutoName(deps.stateDir, `${request.owner.user}-${request.target.key}`, claim)
  if (request.name !== null && !reserveName(deps.stateDir, name, claim)) {
    throw new StateError('SESSION_EXISTS', `a session named "${name}" already exists`, {exit: 2, fix: ['pick another --name', 'see them: gpu-cosplay ps']})
  }
  return new UpUnderway(request, deps, name, gpus, migBefore)
}

/** A record whose undo could not finish keeps the name (recover, or down, releases it once the record is gone). */
function releaseUnlessRecorded(deps: BookStoreDeps, name: string): void {
  if (!recordsNamed(deps, name)) releaseName(deps.stateDir, name)
}

/**
 * Whether any book holds a record of this name. A damaged book does not count: this up wrote only to books it read.
 * Books that cannot be read at all: it may.
 */
function recordsNamed(deps: BookStoreDeps, name: string): boolean {
  return recordedNames(deps.stateDir, deps.trust)?.names.has(name) ?? true
}

/** One GPU's share of the session: its book, the plan on it, and its ranks from firstRank on. */
type Placed = {readonly open: OpenBook; readonly plan: Plan; readonly firstRank: number; readonly ranks: number}
/** ... with its record, once recorded. */
type Share = Placed & {readonly record: SessionRecord}

/** Where a session on its way up stands; each phase moves it one stage on. */
type Stage = 'claimed' | 'read' | 'planned' | 'recorded' | 'devices' | 'gpu-wide' | 'active'

/**
 * A session on its way up, its name claimed: the phases after beginUp, each once and in this order: read, plan,
 * record, makeDevices, (a later layer's steps: runSteps), setGpuWide, activate; undo on a failure, end always. A phase
 * that fails leaves only undo and end. From record on, the session is in the journal: a crash anywhere after it is
 * rolled back by the next command, and a failure is undone by undo (or by end, if the caller did not).
 */
export class UpUnderway {
  private stage: Stage = 'claimed'
  private failed = false
  private undone = false
  private books: HeldBooks | null = null
  private placed: Placed[] = []
  private shares: Share[] = []
  private ctxs: StepContext[] = []
  private notes: string[] = []

  constructor(
    private readonly request: UpRequest,
    private readonly deps: UpDeps,
    readonly name: string,
    private readonly gpus: readonly {readonly uuid: string; readonly name: string; readonly index: number}[],
    private readonly migBefore: ReadonlyMap<string, ReadonlySet<string>>,
  ) {}

  /** The session's first record (rank 0's GPU), which a later layer's steps are made from; once recorded. */
  get session(): SessionRecord {
    return this.recordedShares()[0].record
  }

  /** rank 0's GPU as read under its lock; once recorded. */
  get live(): HostGpu {
    this.recordedShares()
    return this.ctxs[0].live
  }

  /**
   * The GPUs' locks taken (in UUID order) and, under them, their books and the GPUs read, what a reboot voided
   * dropped and what dead processes left rolled back. A spread goes where it fits: a GPU it cannot read now is left out.
   */
  async read(): Promise<void> {
    await this.phase('claimed', 'read', async () => {
      const {deps, gpus, migBefore} = this
      this.books = await openBooks(deps, gpus, {
        optionsFor: (gpu) => ({migExpected: migBefore.get(gpu.uuid)!.size > 0}),
        leaveOutUnreadable: gpus.length > 1,
        signal: deps.cancel.signal,
      })
    })
  }

  /**
   * The plan on each GPU read (with the GPU's calibration), within the owner's quota; the GPUs it does not go to are
   * let go of at once, so nobody waits on them while the session comes up. Returns rank 0's plan.
   */
  async plan(): Promise<Plan> {
    return await this.phase('read', 'planned', async () => {
      const {request, deps} = this
      const {opens, leftOut} = this.books!
      const spread = opens.length + leftOut.length > 1
      // a GPU not read now may be read later (up --wait waits for it); one the catalog cannot model never takes a rank
      const refused = leftOut.map(({gpu, reason}) => ({reason: `GPU ${gpu.index ?? gpu.uuid}: ${reason}`, lasting: false}))
      const hosts = opens.flatMap((open) => {
        try {
          const model = hostModelFor(deps.catalog, open.live)
          // the GPU's calibration moves the host's measured rates, as it does for `plan --host-gpu` (the same plan)
          const calibration = calibrationOf(deps.stateDir, deps.trust, model.key, open.live.driverVersion ?? null)
          return [{open, host: planHostFromProbe(open.live, model, {mpsAvailable: request.mpsAvailable, calibration}), held: heldSettings(open.book)}]
        } catch (error) {
          // a spread goes where it can be planned: a GPU of a model the catalog lacks, or a stale calibration, is left out
          if (!spread || !isCosplayError(error)) throw error
          refused.push({reason: `GPU ${open.live.index}: ${error.message}`, lasting: true})
          return []
        }
      })
      // a first count before planning: over quota is the answer even when no slot is free (and nothing waits in a queue for it)
      this.assertWithinQuota(
        opens.map((o) => o.book),
        0,
      )
      const options = {strict: request.strict, ...request.gpuWide, basis: request.basis}
      const count = request.count ?? 1
      // N devices are planned as one would be, and refused (RANKS_DO_NOT_FIT) where N do not fit on these GPUs now
      const placed =
        count > 1
          ? placeRanks(request.target, hosts, request.objective, count, options, refused).gpus.map((g) => ({
              ...g,
              open: hosts.find((h) => h.host === g.host)!.open,
            }))
          : [{open: opens[0], ranks: 1, plan: planOnGpu(request.target, hosts[0].host, request.objective, hosts[0].held, options)}]
      await this.books!.letGo(opens.filter((o) => !placed.some((p) => p.open === o)))
      let firstRank = 0
      for (const p of placed) {
        this.placed.push({open: p.open, plan: p.plan, firstRank, ranks: p.ranks})
        firstRank += p.ranks
      }
      return this.placed[0].plan
    })
  }

  /**
   * The session written into its GPUs' books as starting, made now (its lifetime counts from here), counted and
   * recorded under the box's quota lock (a concurrent up on another GPU sees this session or waits). Nothing on a GPU
   * has changed before this.
   */
  async record(): Promise<void> {
    await this.phase('planned', 'recorded', async () => {
      const {request, deps, name} = this
      const createdAt = new Date().toISOString()
      const shares = this.placed.map((p, i): Share => ({...p, record: this.recordOf(p, i, createdAt)}))
      const [first, ...parts] = shares
      first.record.spread?.parts.push(
        ...parts.map((s) => ({
          gpuUuid: s.open.book.gpu.uuid,
          gpuIndex: s.open.live.index,
          firstRank: s.firstRank,
          count: s.ranks,
          devices: Array<null>(s.ranks).fill(null),
        })),
      )
      const quota = request.quota ?? null
      const write = async () => {
        // counted over the books of the GPUs it holds now: the ones it let go of are read afresh (others may have changed them)
        this.assertWithinQuota(
          shares.map((s) => s.open.book),
          slicesOf(first.record),
        )
        const taken = shares.find((s) => s.open.book.sessions[name])
        if (taken) {
          throw new StateError('SESSION_EXISTS', `GPU ${taken.open.live.index} still holds a record named "${name}"`, {
            exit: 2,
            fix: ['run gpu-cosplay recover, or pick another --name'],
          })
        }
        // the parts first: a crash before the first record is written leaves parts that are starting, rolled back by
        // the next command that opens their books (nothing was done on a GPU for them)
        for (const s of [...parts, first]) {
          s.open.book.sessions[name] = s.record
          s.open.persist()
        }
      }
      await (quota ? withQuotaLock(deps.stateDir, deps.trust, write) : write())
      this.shares = shares
      this.ctxs = shares.map((s) => s.open.contextFor(s.record))
      const {opens, leftOut} = this.books!
      this.notes = [...new Set([...opens.flatMap((o) => o.notes), ...leftOut.map(({gpu, reason}) => `left GPU ${gpu.index ?? gpu.uuid} out: ${reason}`)])]
    })
  }

  /**
   * What the session runs on, on each of its GPUs: persistence, then (on a slice) MIG mode and its instances, named
   * by their UUIDs; the first record names every rank's device (a container is made from it); and without a
   * container, the session's MPS daemons on the host.
   */
  async makeDevices(): Promise<void> {
    await this.phase('recorded', 'devices', async () => {
      const {request, deps, name, shares, ctxs} = this
      const [first, ...parts] = shares
      for (const [i, s] of shares.entries()) {
        await runSteps(ctxs[i], s.open.persist, instanceSteps(s.plan, s.firstRank, s.ranks), deps.cancel)
        await nameSlots(deps.gpu, ctxs[i].live, s.record, s.open.book, this.migBefore.get(s.open.book.gpu.uuid)!)
        s.open.persist()
      }
      for (const [i, part] of (first.record.spread?.parts ?? []).entries()) {
        const s = parts[i]
        part.devices = Array.from({length: s.ranks}, (_, k) => deviceOfRank(s.record, s.firstRank + k, s.open.book.gpu.uuid))
      }
      first.open.persist()
      if (first.plan.mps && request.mpsOnHost) {
        const {owner, runAsOwner} = request.mpsOnHost
        const impl = stepFor(deps.steps, 'start-mps')
        for (const [i, s] of shares.entries()) {
          const daemons = Array.from({length: s.ranks}, (_, k) =>
            mpsStepFor(impl, s.plan.mps!, deps.stateDir, deps.trust, name, owner, runAsOwner, s.firstRank + k),
          )
          await runSteps(ctxs[i], s.open.persist, daemons, deps.cancel)
        }
      }
    })
  }

  /** Steps of a later layer (the container), journaled in the first record after its devices, undone with the rest. */
  async runSteps(steps: readonly PlannedStep[]): Promise<void> {
    await this.phase('devices', 'devices', () => runSteps(this.ctxs[0], this.shares[0].open.persist, steps, this.deps.cancel))
  }

  /** The GPU-wide settings the plan takes (a whole GPU's, or asked for): last, since nothing before depends on them. */
  async setGpuWide(): Promise<void> {
    await this.phase('devices', 'gpu-wide', async () => {
      for (const [i, s] of this.shares.entries()) await runSteps(this.ctxs[i], s.open.persist, gpuWideSteps(s.plan), this.deps.cancel)
    })
  }

  /** The commit: every record turns active (the parts first); a Ctrl-C that came during the last step is INTERRUPTED. */
  activate(): ActiveSession {
    this.enter('gpu-wide')
    try {
      markActive(this.booked(), this.deps.cancel)
    } catch (error) {
      this.failed = true
      throw error
    }
    this.stage = 'active'
    const {name, shares, ctxs, notes} = this
    const [first, ...parts] = shares
    return {
      name,
      gpuUuid: first.open.book.gpu.uuid,
      gpuIndex: ctxs[0].live.index,
      session: first.record,
      plan: first.plan,
      physicalMiB: physicalMiBOf(first.plan, ctxs[0].live.memoryTotalMiB),
      mpsDaemon: mpsDaemonOf(first.record),
      parts: parts.map((s) => ({gpuUuid: s.open.book.gpu.uuid, gpuIndex: s.open.live.index, session: s.record})),
      recovered: this.books!.opens.flatMap((o) => o.recovered),
      notes: [...notes, ...ctxs.flatMap((c) => c.notes)],
    }
  }

  /**
   * After a failure, or Ctrl-C: a session recorded but not active is undone newest step first on every GPU and leaves
   * the books; what cannot be undone stays journaled for `recover`, and `error` says so in its notes.
   */
  async undo(error: unknown): Promise<void> {
    if (this.shares.length === 0 || this.stage === 'active' || this.undone) return
    this.undone = true
    this.failed = true
    await unwindRecords(this.booked(), this.deps, error, this.notes)
  }

  /**
   * Always last: an active session's books closed and every lock let go of; otherwise the session undone (if the
   * caller did not), the locks let go of, and the name too unless a record of it remains.
   */
  async end(): Promise<void> {
    if (this.stage === 'active') {
      await this.books!.close()
      return
    }
    try {
      await this.undo(new Error(`up ended at ${this.stage}`))
    } finally {
      await this.books?.release()
      releaseUnlessRecorded(this.deps, this.name)
    }
  }

  private recordOf(p: Placed, i: number, createdAt: string): SessionRecord {
    const {request, name} = this
    const slot = () => p.plan.mig && {profile: p.plan.mig.profile, profileId: p.plan.mig.profileId, gpuInstanceId: null, computeInstanceId: null, uuid: null}
    return {
      ...newSessionBase(name, request),
      createdAt,
      target: {key: request.target.key, name: request.target.name},
      plan: p.plan,
      mig: slot(),
      ...(p.ranks > 1 && p.plan.mig ? {moreSlices: Array.from({length: p.ranks - 1}, () => slot()!)} : {}),
      // a lifetime counted from the moment the session is recorded as made (its createdAt), to the millisecond
      ...(i === 0 && request.ttlMs ? {expiresAt: new Date(Date.parse(createdAt) + request.ttlMs).toISOString()} : {}),
      ...(i === 0 && this.placed.length > 1 ? {spread: {ranksHere: p.ranks, parts: []}} : {}),
      ...(i > 0 ? {partOf: {gpuUuid: this.placed[0].open.book.gpu.uuid, createdAt, firstRank: p.firstRank, count: p.ranks}} : {}),
    }
  }

  /** The owner's quota (if any) still leaves room for `adding` memory slices, counted with `books` as this up holds them. */
  private assertWithinQuota(books: readonly GpuBook[], adding: number): void {
    const quota = this.request.quota ?? null
    if (quota) assertWithinQuota(quota, holdingOf(this.deps, this.request.owner.uid, books), adding)
  }

  /** Each record with its step context and its book's persist, rank 0's first. */
  private booked(): BookedRecord[] {
    return this.shares.map((s, i) => ({ctx: this.ctxs[i], persist: s.open.persist}))
  }

  private recordedShares(): readonly Share[] {
    if (this.shares.length === 0) throw new Error(`bring-up: the session is read before it is recorded (at ${this.stage})`)
    return this.shares
  }

  /** A phase runs only from its stage and never after a failure; one that throws leaves only undo and end. */
  private async phase<T>(from: Stage, to: Stage, body: () => Promise<T>): Promise<T> {
    this.enter(from)
    try {
      const result = await body()
      this.stage = to
      return result
    } catch (error) {
      this.failed = true
      throw error
    }
  }

  private enter(stage: Stage): void {
    if (this.failed || this.undone) throw new Error(`bring-up: a phase ran after a failure (at ${this.stage})`)
    if (this.stage !== stage) throw new Error(`bring-up: a phase for a session at ${stage} ran at ${this.stage}`)
  }
}

function mpsDaemonOf(session: SessionRecord): ActiveSession['mpsDaemon'] {
  const entry = session.journal.find((e) => e.kind === 'start-mps' && e.state === 'done')
  if (!entry) return null
  const params = entry.params as StartMpsParams
  return {pipeDirectory: params.pipeDirectory, logDirectory: params.logDirectory}
}

/** What the session runs on: persistence, then (on a slice) MIG mode and the instances of its ranks on this GPU. */
function instanceSteps(plan: Plan, firstRank: number, ranks: number): PlannedStep[] {
  const steps: PlannedStep[] = [{impl: setPersistence, params: {value: true}}]
  if (plan.mig) {
    const {profile, profileId} = plan.mig
    steps.push(
      {impl: enableMig, params: {value: true}},
      ...Array.from({length: ranks}, (_, k) => ({
        impl: createGpuInstance,
        params: {profile, profileId, withComputeInstance: true, ...(firstRank + k > 0 ? {rank: firstRank + k} : {})},
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
function calibrationOf(stateDir: string, trust: StatePolicy, model: string, driver: string | null): PlanCalibration | null {
  if (driver === null) return null
  const found = readCalibration(stateDir, model, driver, trust)
  return found && {fractions: found.calibration.fractions, file: found.file, driver: found.calibration.driver}
}
