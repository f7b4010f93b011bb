/**
 * The apply layer over the nvidia-smi simulator, in process: what the apply context gives the commands (the GPU
 * control, the step registry, a state directory), for tests below the command layer. No container: sessions run
 * with --no-container's shape (no MPS daemon).
 */
import {hostname} from 'node:os'
import {join} from 'node:path'

import {type ActiveSession, type UpDeps, type UpRequest, underway} from '../../../src/apply/bring-up.js'
import {resolveStateDir} from '../../../src/apply/state-dir.js'
import {sessionSteps} from '../../../src/container/session-steps.js'
import type {Executor} from '../../../src/core/executor.js'
import {LocalExecutor} from '../../../src/core/local-executor.js'
import {SmiGpuControl} from '../../../src/host/gpu-control.js'
import {Smi} from '../../../src/host/smi.js'
import {Sim, SIM_BIN, tempDir} from '../../cli/support/run-cli.js'
import {builtinCatalog, target} from '../plan/catalog-for-tests.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

export type SimBox = {readonly sim: Sim; readonly stateDir: string; readonly deps: UpDeps}

/** A simulated box (h200 by default) with MIG on, and a fresh state directory. */
export function simBox(gpus = 1, model = 'h200'): SimBox {
  const sim = Sim.create(model, gpus)
  sim.enableMig(...Array.from({length: gpus}, (_, i) => i))
  const home = tempDir()
  const stateDir = resolveStateDir({GPU_COSPLAY_STATE_DIR: join(home, 'state')}, home, SANDBOX).dir
  // the simulator's state reaches nvidia-smi through the call (Jest's process.env is not the child's)
  const local = new LocalExecutor()
  const executor: Executor = {run: (argv, options = {}) => local.run(argv, {...options, env: {...options.env, GPU_COSPLAY_SIM_STATE: sim.statePath}})}
  const gpu = new SmiGpuControl(new Smi(executor, {path: SIM_BIN, sudo: false}))
  return {sim, stateDir, deps: {gpu, steps: sessionSteps(), stateDir, bootId: null, trust: SANDBOX, catalog: builtinCatalog(), cancel: {requested: false}}}
}

export const ALICE = {uid: 1001, user: 'alice'}
export const BOB = {uid: 1002, user: 'bob'}

/** `up 3090 --no-container` as `owner` on GPU `hostGpu`, with what else the test sets. */
export function upRequest(owner: {uid: number; user: string}, extra: Partial<UpRequest> = {}): UpRequest {
  return {
    target: target('3090'),
    hostGpu: 0,
    objective: 'balanced',
    strict: false,
    name: null,
    owner,
    pid: process.pid,
    hostname: hostname(),
    mpsAvailable: false,
    mpsOnHost: null,
    ...extra,
  }
}

/** The GPU as a `down` must leave it: what the simulator holds of it, minus call counters. */
export function gpuPicture(sim: Sim, gpu = 0): unknown {
  const g = sim.state().gpus[gpu]
  return {persistence: g.persistence, mig: g.mig_current, gis: g.gis, clocks: g.clocks_locked, power: g.power_limit}
}

/**
 * bringUp's phases with `meanwhile` run after planning, before the session is recorded (where `up` settles its
 * container's engine, image and key): the moment a concurrent command can slip in with this up's locks held.
 */
export async function bringUpPausing(request: UpRequest, deps: UpDeps, meanwhile: () => Promise<void>): Promise<ActiveSession> {
  return await underway(request, deps, async (up) => {
    await up.read()
    await up.plan()
    await meanwhile()
    await up.record()
    await up.makeDevices()
    await up.setGpuWide()
    return up.activate()
  })
}
