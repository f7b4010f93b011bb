import type {Catalog} from '../catalog/types.js'
import {InputError, StateError} from '../core/errors.js'
import {pickGpu} from '../host/pick-gpu.js'
import type {HostGpu} from '../host/types.js'
import {hostModelFor, settingRangesOf} from '../plan/plan-host.js'
import {CLOCK_STEP_MHZ, supportedClocksMHz} from '../plan/throughput.js'
import {type BookStoreDeps, type OpenBook, rolledBackNotes, withBook} from './book-store.js'
import {type Cancellation, completeOrUnwind, runSteps} from './journal.js'
import {type GpuBook, isLeaseSession, type Lease, type LeaseSessionRecord, newSessionBase, type Setting, type SettingValue} from './gpu-book.js'
import {lockClocks, setPersistence, setPowerLimit, stepKindOf} from './steps/lease-steps.js'
import type {PlannedStep} from './steps/step.js'
import {assertMayEnd, endSessionLocked, type Requester} from './tear-down.js'

/**
 * `gpu-cosplay lease hold|release`: GPU-wide settings held for a named holder, with no instance and no container,
 * for clusters whose scheduler places the workload (a Kubernetes DaemonSet, a Slurm prolog). A hold is a session
 * of its own in the GPU's book (kind 'lease', named lease:HOLDER) running only the lease steps through the journal runner (engine.ts),
 * so it is journaled, rolled back after a crash mid-way, and shares the leases with `up` sessions: whoever
 * leaves last restores the values found before the first.
 */

/** A Kubernetes object name with a prefix (k8s-<DaemonSet>, up to 67 characters) or slurm-job-<id>, with room to spare. */
const HOLDER = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,79}$/

export function assertHolder(holder: string): void {
  if (!HOLDER.test(holder)) {
    throw new InputError('BAD_HOLDER', `"${holder}" is not a usable lease holder name`, {
      fix: ['use letters, digits, "_", "." or "-", starting with a letter or digit, at most 80 characters (e.g. slurm-job-42)'],
    })
  }
}

/** What can be checked before the GPU is contacted. */
export function assertHoldInput(holder: string, values: LeaseValues): void {
  assertHolder(holder)
  if (values.clockMHz === null && values.powerLimitW === null) {
    throw new InputError('NOTHING_TO_HOLD', 'a lease holds a clock lock, a power limit or both', {fix: ['pass --clock-mhz MHZ and/or --power-limit-w WATTS']})
  }
}

/** A name no `up` session can have (they allow no ":"), so a holder never collides with one. */
export function leaseSessionName(holder: string): string {
  return `lease:${holder}`
}

export type LeaseValues = {readonly clockMHz: number | null; readonly powerLimitW: number | null}

export type HoldRequest = LeaseValues & {
  readonly hostGpu: number
  readonly holder: string
  readonly owner: {readonly uid: number; readonly user: string}
  readonly isRoot: boolean
  readonly pid: number
  readonly hostname: string
}

export type HoldDeps = BookStoreDeps & {readonly catalog: Catalog; readonly cancel: Cancellation; readonly onProgress?: (message: string) => void}

/** set: this hold changed the GPU; adopted: the GPU had that value already; joined: others hold it at that value; held: this holder already did */
export type HoldAction = 'set' | 'adopted' | 'joined' | 'held'

/** A GPU-wide setting as the book holds it. */
export type LeaseState = Lease & {setting: Setting}

export type HoldOutcome = {
  holder: string
  session: string
  hostGpu: {index: number; uuid: string}
  clockMHz: number | null
  powerLimitW: number | null
  /** whether this call changed the GPU (false: joined or adopted values in force, or held them already) */
  changed: boolean
  settings: {setting: Setting; value: SettingValue; action: HoldAction}[]
  /** every GPU-wide lease on the GPU afterwards */
  leases: LeaseState[]
  notes: string[]
}

export type ReleaseOutcome = {
  holder: string
  session: string
  hostGpu: {index: number; uuid: string}
  /** false: the holder held nothing on this GPU (released already, or never held) */
  released: boolean
  /** settings put back to the values found before the first holder */
  restored: string[]
  leases: LeaseState[]
  notes: string[]
}

/** Takes (or joins) the lease for the holder; applies the values when nobody holds them yet. Idempotent. */
export async function holdLease(request: HoldRequest, deps: HoldDeps): Promise<HoldOutcome> {
  assertHoldInput(request.holder, request)
  const gpu = pickGpu(await deps.gpu.listGpus(), request.hostGpu)
  // -q alone: the lease steps read settings only; instances of dead sessions are listed by their own undo
  return withBook(deps, gpu, (open) => holdLocked(request, deps, open), {read: 'settings'})
}

async function holdLocked(request: HoldRequest, deps: HoldDeps, open: OpenBook): Promise<HoldOutcome> {
  const {book, persist} = open
  const name = leaseSessionName(request.holder)
  assertValuesFit(request, open.live, deps.catalog)
  const base = {
    holder: request.holder,
    session: name,
    hostGpu: {index: open.live.index, uuid: book.gpu.uuid},
    clockMHz: request.clockMHz,
    powerLimitW: request.powerLimitW,
  }

  const existing = book.sessions[name]
  if (existing && isLeaseSession(existing)) {
    assertMayEnd(existing, {uid: request.owner.uid, isRoot: request.isRoot})
    if (existing.hold.clockMHz !== request.clockMHz || existing.hold.powerLimitW !== request.powerLimitW) {
      throw new StateError('LEASE_CONFLICT', `${request.holder} already holds ${describeValues(existing.hold)} on GPU ${open.live.index}`, {
        fix: [`release it first: gpu-cosplay lease release --host-gpu ${open.live.index} --holder ${request.holder}`, 'or hold under another --holder'],
      })
    }
    const settings = requestedSettings(request).map(([setting, value]) => ({setting, value, action: 'held' as const}))
    return {...base, changed: false, settings, leases: leaseStates(book), notes: notesOf(open)}
  }
  assertNoConflict(book, request, open.live.index)

  const session: LeaseSessionRecord = {
    kind: 'lease',
    ...newSessionBase(name, request),
    holder: request.holder,
    hold: {clockMHz: request.clockMHz, powerLimitW: request.powerLimitW},
  }
  book.sessions[name] = session
  persist()
  const ctx = open.contextFor(session)
  await completeOrUnwind(ctx, persist, deps, () => runSteps(ctx, persist, holdSteps(request), deps.cancel))

  const notes = [...notesOf(open), ...ctx.notes]
  const settings: HoldOutcome['settings'] = []
  for (const [setting, value] of requestedSettings(request)) {
    const entry = session.journal.find((e) => e.kind === stepKindOf(setting) && e.state === 'done')
    if (!entry) notes.push(`GPU ${open.live.index} does not report its ${setting}, so it was not held`)
    else settings.push({setting, value, action: ACTION_OF[entry.prior.mode as string] ?? 'set'})
  }
  // persistence counts too: -pm 1 changed the GPU even when the clock and power were joined
  const changed = session.journal.some((e) => e.state === 'done' && e.prior.mode === 'change')
  return {...base, changed, settings, leases: leaseStates(book), notes}
}

/** Drops the holder's hold; the last holder of a setting (lease or `up` session) restores the value found before. Idempotent. */
export async function releaseLease(request: {hostGpu: number; holder: string}, requester: Requester, deps: BookStoreDeps): Promise<ReleaseOutcome> {
  assertHolder(request.holder)
  const gpu = pickGpu(await deps.gpu.listGpus(), request.hostGpu)
  const name = leaseSessionName(request.holder)
  return withBook(
    deps,
    gpu,
    async (open) => {
      const base = {holder: request.holder, session: name, hostGpu: {index: open.live.index, uuid: gpu.uuid}}
      const session = open.book.sessions[name]
      if (!session) {
        return {...base, released: false, restored: [], leases: leaseStates(open.book), notes: notesOf(open)}
      }
      assertMayEnd(session, requester)
      const closed = await endSessionLocked(session, open, deps)
      return {
        ...base,
        released: true,
        restored: [...closed.restored],
        leases: leaseStates(open.book),
        notes: [...rolledBackNotes(open.recovered), ...closed.notes],
      }
    },
    {read: 'settings'},
  )
}

const ACTION_OF: Readonly<Record<string, HoldAction>> = {change: 'set', adopt: 'adopted', join: 'joined'}

function requestedSettings(values: LeaseValues): [Setting, SettingValue][] {
  return [
    ...(values.clockMHz === null ? [] : [['clocks', values.clockMHz] as [Setting, SettingValue]]),
    ...(values.powerLimitW === null ? [] : [['power-limit', values.powerLimitW] as [Setting, SettingValue]]),
  ]
}

/**
 * Persistence first, as for `up`: without it the driver may tear the GPU down between one client and the next
 * (between a prolog and its job) and drop the clock lock and power limit with it.
 */
function holdSteps(values: LeaseValues): PlannedStep[] {
  return [
    {impl: setPersistence, params: {value: true}},
    ...(values.clockMHz === null ? [] : [{impl: lockClocks, params: {value: values.clockMHz}}]),
    ...(values.powerLimitW === null ? [] : [{impl: setPowerLimit, params: {value: values.powerLimitW}}]),
  ]
}

/** A clock the GPU can lock to (nvidia-smi -lgc snaps others to a neighbour), a power limit within its range. */
function assertValuesFit(values: LeaseValues, live: HostGpu, catalog: Catalog): void {
  const {clockRangeMHz, powerRangeW} = settingRangesOf(live, hostModelFor(catalog, live))
  const gpu = `GPU ${live.index} (${live.name})`
  if (values.clockMHz !== null) {
    const supported = supportedClocksMHz(clockRangeMHz)
    if (!supported.includes(values.clockMHz)) {
      const nearest = [...supported].sort((a, b) => Math.abs(a - values.clockMHz!) - Math.abs(b - values.clockMHz!))[0]
      throw new InputError(
        'BAD_CLOCK',
        `${gpu} cannot lock its clock at ${values.clockMHz} MHz: it supports ${clockRangeMHz.min}-${clockRangeMHz.max} MHz in ${CLOCK_STEP_MHZ} MHz steps down from ${clockRangeMHz.max}`,
        {fix: [`e.g. --clock-mhz ${nearest}`]},
      )
    }
  }
  if (values.powerLimitW !== null && (values.powerLimitW < powerRangeW.min || values.powerLimitW > powerRangeW.max)) {
    throw new InputError('BAD_POWER_LIMIT', `${gpu} takes a power limit of ${powerRangeW.min}-${powerRangeW.max} W, not ${values.powerLimitW} W`, {
      fix: [`pass --power-limit-w between ${powerRangeW.min} and ${powerRangeW.max}`],
    })
  }
}

/** A value others hold differently binds them too: refuse rather than change it under them. */
function assertNoConflict(book: GpuBook, values: LeaseValues, gpuIndex: number): void {
  const conflicts: string[] = []
  const fixes: string[] = []
  for (const [setting, wanted] of requestedSettings(values)) {
    const lease = book.leases[setting]
    if (!lease || lease.holders.length === 0 || lease.value === wanted) continue
    const flag = setting === 'clocks' ? '--clock-mhz' : '--power-limit-w'
    conflicts.push(
      `${lease.holders.join(', ')} hold${lease.holders.length === 1 ? 's' : ''} ${showSetting(setting, lease.value)} (wanted ${showSetting(setting, wanted)})`,
    )
    if (lease.value !== null) fixes.push(`hold the value in force: ${flag} ${lease.value}`)
  }
  if (conflicts.length === 0) return
  throw new StateError('LEASE_CONFLICT', `GPU ${gpuIndex}: ${conflicts.join('; ')}`, {
    fix: [...fixes, 'or wait until they end (see gpu-cosplay status), or use another GPU: --host-gpu N'],
  })
}

function showSetting(setting: Setting, value: SettingValue): string {
  if (setting === 'clocks') return value === null ? 'the clock unlocked' : `the clock at ${value} MHz`
  return `the power limit at ${value} W`
}

function describeValues(values: LeaseValues): string {
  return requestedSettings(values)
    .map(([setting, value]) => showSetting(setting, value))
    .join(' and ')
}

/** What opening the book found: reboots, sessions of dead processes rolled back first. */
function notesOf(open: OpenBook): string[] {
  return [...open.notes, ...rolledBackNotes(open.recovered)]
}

function leaseStates(book: GpuBook): LeaseState[] {
  return Object.entries(book.leases)
    .filter(([, lease]) => lease !== undefined && lease.holders.length > 0)
    .map(([setting, lease]) => ({setting: setting as Setting, value: lease!.value, original: lease!.original, holders: [...lease!.holders]}))
}
