import type {StepKind} from '../../core/names.js'
import type {StatePolicy} from '../../core/state-policy.js'
import type {GpuControl} from '../../host/gpu-control.js'
import type {HostGpu} from '../../host/types.js'
import type {BookSession, GpuBook, JournalEntry} from '../gpu-book.js'

export type Json = Record<string, unknown>

/** What a step sees: the GPU, this GPU's book (a working copy the journal runner persists), and the session. */
export type StepContext = {
  readonly gpu: GpuControl
  readonly book: GpuBook
  readonly session: BookSession
  /** the GPU as read under the lock before the steps ran */
  readonly live: HostGpu
  /** things the user should know that are not failures (e.g. MIG left on because others use it) */
  readonly notes: string[]
  /** the state directory's trust (the call context's): which folders a step makes are root's alone */
  readonly trust: StatePolicy
}

/**
 * One mutation with its undo. Steps are rebuilt from a journal entry's kind and params, so another
 * process can undo the work of one that died.
 */
export interface StepImpl {
  readonly kind: StepKind
  describe(params: Json): string
  /** What is there now, recorded before acting; null when there is nothing to do for this session. */
  readPrior(ctx: StepContext, params: Json): Promise<Json | null>
  /**
   * Acts; returns what undo needs (IDs). A half-done apply removes its own effect before throwing. It lets a refused
   * nvidia-smi change (SmiError.refused) escape only when that was its first change: the journal runner then drops the
   * intent, since nothing of the step happened (a later change's refusal must be wrapped, so that undo runs).
   */
  apply(ctx: StepContext, params: Json, prior: Json): Promise<Json>
  /** Reverts. Tolerates the effect being gone already; for an entry still `intended` it first finds out whether it happened. */
  undo(ctx: StepContext, entry: JournalEntry): Promise<void>
}

export type PlannedStep = {readonly impl: StepImpl; readonly params: Json}
