import {StateError} from '../../core/errors.js'
import type {StepKind} from '../../core/names.js'
import {createComputeInstance, createGpuInstance} from './instance-steps.js'
import {enableMig, lockClocks, setPersistence, setPowerLimit} from './lease-steps.js'
import type {StepImpl} from './step.js'

const STEPS = new Map<StepKind, StepImpl>(
  [setPersistence, enableMig, createGpuInstance, createComputeInstance, lockClocks, setPowerLimit].map((s) => [s.kind, s]),
)

/** Other layers (the container) add their steps here, so the engine and recovery know them. */
export function registerStep(step: StepImpl): void {
  STEPS.set(step.kind, step)
}

export function stepFor(kind: StepKind): StepImpl {
  const step = STEPS.get(kind)
  if (!step) throw new StateError('UNKNOWN_STEP', `the journal names a step this version cannot undo: ${kind}`, {fix: ['run this with the gpu-cosplay version that wrote it']})
  return step
}
