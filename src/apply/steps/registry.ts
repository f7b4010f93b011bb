import {StateError} from '../../core/errors.js'
import type {StepKind} from '../../core/names.js'
import {createGpuInstance} from './instance-steps.js'
import {enableMig, lockClocks, setPersistence, setPowerLimit} from './lease-steps.js'
import type {StepImpl} from './step.js'

/**
 * The steps a process can apply and undo, by journal kind. Built once at the command edge and handed to
 * the journal runner, so that undoing a journal written by another process never depends on which modules
 * happened to be imported.
 */
export type StepRegistry = ReadonlyMap<StepKind, StepImpl>

/** The GPU's own steps; later layers (the container) add theirs when they build a registry. */
export const GPU_STEPS: readonly StepImpl[] = [setPersistence, enableMig, createGpuInstance, lockClocks, setPowerLimit]

export function stepRegistry(steps: readonly StepImpl[]): StepRegistry {
  return new Map(steps.map((s) => [s.kind, s]))
}

export function stepFor(registry: StepRegistry, kind: StepKind): StepImpl {
  const step = registry.get(kind)
  if (!step)
    throw new StateError('UNKNOWN_STEP', `the journal names a step this version cannot undo: ${kind}`, {
      fix: ['run this with the gpu-cosplay version that wrote it'],
    })
  return step
}
