import createDebug from 'debug'

import {addErrorNotes, StateError} from '../core/errors.js'
import type {StatePolicy} from '../core/state-policy.js'
import {DEBUG_NS, HOST_ENV} from '../core/names.js'
import type {GpuControl} from '../host/gpu-control.js'
import {isRefusedChange} from '../host/smi-error.js'
import type {HostGpu} from '../host/types.js'
import type {BookSession, GpuBook} from './gpu-book.js'
import {type StepRegistry, stepFor} from './steps/registry.js'
import type {PlannedStep, StepContext} from './steps/step.js'

const debug = createDebug(DEBUG_NS.apply)

/** Set by the command's signal handler; the journal runner finishes the step in flight, then unwinds. */
/** requested: finish the step in flight, then undo; signal: ends a wait (a lock) at once, before anything changed */
export type Cancellation = {readonly requested: boolean; readonly signal?: AbortSignal}

export type Persist = () => void

/** What the journal runner acts through: the GPU, and the steps it knows how to undo. */
export type EngineDeps = {
  readonly gpu: GpuControl
  readonly steps: StepRegistry
  /** whose files in the state directory are read (the call context's policy: in the engine root's alone) */
  readonly trust: StatePolicy
}

export function stepContext(gpu: GpuControl, book: GpuBook, session: BookSession, live: HostGpu, trust: StatePolicy): StepContext {
  return {gpu, book, session, live, notes: [], trust}
}

/**
 * Runs the steps in order. Per step: read what is there, write the intent and that prior value to disk,
 * act, then mark it done. Nothing touches the GPU before its intent is on disk. A step whose change nvidia-smi
 * refused outright never happened: its intent leaves the journal, so that nothing undoes (or asks `recover` to
 * undo) a change that was never made. Any other failure leaves the intent for the unwind to settle.
 */
export async function runSteps(ctx: StepContext, persist: Persist, steps: readonly PlannedStep[], cancel: Cancellation): Promise<void> {
  for (const {impl, params} of steps) {
    if (cancel.requested) {
      throw new StateError('INTERRUPTED', `interrupted before "${impl.describe(params)}"; undoing what was done`)
    }
    const prior = await impl.readPrior(ctx, params)
    if (prior === null) continue
    const entry = {kind: impl.kind, state: 'intended' as const, params, prior, result: null}
    ctx.session.journal.push(entry)
    persist()
    debug('%s: %s', ctx.session.name, impl.describe(params))
    const result = await impl.apply(ctx, params, prior).catch((error: unknown) => {
      if (isRefusedChange(error)) {
        debug('%s: refused, never happened: %s', ctx.session.name, impl.describe(params))
        ctx.session.journal.splice(ctx.session.journal.indexOf(entry), 1)
        persist()
      }
      throw error
    })
    // Test-only: GPU_COSPLAY_TEST_PAUSE_AFTER_STEP=<kind> sleeps after that step acted and before it is recorded
    // done, the widest crash window there is (the crash tests kill -9 there, for any step kind).
    if (process.env[HOST_ENV.testPauseAfterStep] === impl.kind) {
      debug('test pause after %s (%s)', impl.kind, HOST_ENV.testPauseAfterStep)
      await new Promise((resolve) => setTimeout(resolve, 60_000))
    }
    const recorded = ctx.session.journal[ctx.session.journal.length - 1]
    recorded.result = result
    recorded.state = 'done'
    persist()
  }
}

/**
 * Reverts the session's journal newest-first, marking each entry as it goes, so that a crash here
 * leaves a journal the next run can finish. Keeps going past a failing undo and throws the first error.
 */
export async function unwindSession(
  ctx: StepContext,
  persist: Persist,
  steps: StepRegistry,
  {keepGoing = false}: {readonly keepGoing?: boolean} = {},
): Promise<void> {
  let firstError: unknown = null
  for (const entry of [...ctx.session.journal].reverse()) {
    if (entry.state === 'undone') continue
    try {
      debug('%s: undo %s (%s)', ctx.session.name, entry.kind, entry.state)
      await stepFor(steps, entry.kind).undo(ctx, entry)
      entry.state = 'undone'
      persist()
    } catch (error) {
      debug('%s: undo %s failed: %O', ctx.session.name, entry.kind, error)
      // Newest first, and no further: an earlier step's undo may need this one's (MIG mode goes off only once the
      // session's instances are gone). What is left stays journaled, in order, for the next try. A forced reset
      // (keepGoing) puts back what it can.
      if (!keepGoing) throw error
      firstError ??= error
    }
  }
  if (firstError) throw firstError
}

/** One GPU's record of a session, with the write that saves its book. */
export type BookedRecord = {readonly ctx: StepContext; readonly persist: Persist}

/**
 * A new session from its first step to `active`: `act` runs its steps; on any failure, or a Ctrl-C that came
 * during the last one, what it did is undone newest-first and the session leaves the book. What cannot be
 * undone stays journaled for `recover`, and the error says so in its notes. A session spread over several GPUs has
 * a record in each (`parts`): they turn active before the first one, which turns active last (the commit: a crash
 * before it voids the parts, recoverAbandoned), and are undone after it (its container holds their devices).
 * bring-up runs the same two halves as phases of its own (markActive, unwindRecords).
 */
export async function completeOrUnwind(
  ctx: StepContext,
  persist: Persist,
  deps: {readonly steps: StepRegistry; readonly cancel: Cancellation; readonly onProgress?: (message: string) => void},
  act: () => Promise<void>,
  notes: string[] = [],
  parts: readonly BookedRecord[] = [],
): Promise<void> {
  const records = [{ctx, persist}, ...parts]
  try {
    await act()
    markActive(records, deps.cancel)
  } catch (error) {
    await unwindRecords(records, deps, error, notes)
    throw error
  }
}

/** The records of a session whose steps are all done marked active, its parts first; Ctrl-C meanwhile is INTERRUPTED. */
export function markActive(records: readonly BookedRecord[], cancel: Cancellation): void {
  if (cancel.requested) throw new StateError('INTERRUPTED', 'interrupted; undoing what was done')
  const [first, ...parts] = records
  for (const record of [...parts, first]) {
    record.ctx.session.phase = 'active'
    record.persist()
  }
}

/**
 * A session that failed on its way up undone, every record (the first, then its parts on other GPUs) in reverse
 * journal order and removed from its book; what could not be undone stays journaled and is noted on the error.
 */
export async function unwindRecords(
  records: readonly BookedRecord[],
  deps: {readonly steps: StepRegistry; readonly onProgress?: (message: string) => void},
  error: unknown,
  notes: string[],
): Promise<void> {
  deps.onProgress?.('undoing what this session changed')
  for (const record of records) {
    try {
      await unwindSession(record.ctx, record.persist, deps.steps)
      delete record.ctx.book.sessions[record.ctx.session.name]
      record.persist()
    } catch (undoError) {
      notes.push(`could not undo everything (${(undoError as Error).message}); run gpu-cosplay recover`)
    }
  }
  addErrorNotes(error, notes)
}

/**
 * Sessions found starting or stopping by a process that holds the GPU lock belong to a process that
 * died mid-way: roll each back (a killed `up`) or finish it (a killed `down`). Both mean undoing what
 * the journal says was, or may have been, done. So are the parts of a spread session whose first record did not
 * become active, or has gone (a killed `up` between the parts' and the first record's last write, a killed `down`).
 */
export async function recoverAbandoned(
  deps: EngineDeps,
  book: GpuBook,
  live: HostGpu,
  persist: Persist,
  /** an active record that is void all the same: a spread session's part whose first record is gone or unfinished */
  orphaned: (session: BookSession) => boolean = () => false,
): Promise<{recovered: string[]; notes: string[]}> {
  const recovered: string[] = []
  const notes: string[] = []
  for (const session of Object.values(book.sessions)) {
    if (session.phase === 'active' && !orphaned(session)) continue
    const ctx = stepContext(deps.gpu, book, session, live, deps.trust)
    await unwindSession(ctx, persist, deps.steps)
    delete book.sessions[session.name]
    persist()
    recovered.push(session.name)
    notes.push(...ctx.notes)
  }
  return {recovered, notes}
}
