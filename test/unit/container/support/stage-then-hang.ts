/**
 * The child of the stage-mounts crash test (bundled by it with esbuild, run with node, killed with SIGKILL): an `up`
 * on the simulator whose container part is only the 'stage-mounts' step of a member's pinned workspace, which, once it
 * has bound, says "staged" and hangs before its journal entry is marked done: the widest crash window there is.
 * Arguments: the simulator's state file, the state directory, the workspace, the session name.
 */
import {hostname} from 'node:os'

import {beginUp} from '../../../../src/apply/bring-up.js'
import {stepFor} from '../../../../src/apply/steps/registry.js'
import type {StepImpl} from '../../../../src/apply/steps/step.js'
import {pinMounts} from '../../../../src/container/pin-mounts.js'
import {sessionSteps} from '../../../../src/container/session-steps.js'
import {stagingDirOf} from '../../../../src/core/state-layout.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../../src/core/state-policy.js'
import type {Executor} from '../../../../src/core/executor.js'
import {LocalExecutor} from '../../../../src/core/local-executor.js'
import {SmiGpuControl} from '../../../../src/host/gpu-control.js'
import {Smi} from '../../../../src/host/smi.js'
import {builtinCatalog, target} from '../../plan/catalog-for-tests.js'

const [simState, stateDir, workspace, session, simBin] = process.argv.slice(2)
const local = new LocalExecutor()
const executor: Executor = {run: (argv, options = {}) => local.run(argv, {...options, env: {...options.env, GPU_COSPLAY_SIM_STATE: simState}})}
const steps = sessionSteps()
const deps = {
  gpu: new SmiGpuControl(new Smi(executor, {path: simBin, sudo: false})),
  steps,
  stateDir,
  bootId: null,
  trust: SANDBOX,
  catalog: builtinCatalog(),
  cancel: {requested: false},
}

const pinned = await pinMounts({workspace, volumes: []}, {uid: 65534, gid: 65534, user: 'nobody', groups: []}, {executor: local})
const stage = stepFor(steps, 'stage-mounts')
const hanging: StepImpl = {
  ...stage,
  async apply(ctx, params, prior) {
    await stage.apply(ctx, params, prior)
    process.stdout.write('staged\n')
    setInterval(() => undefined, 60_000)
    return await new Promise<never>(() => undefined)
  },
}
const {workspace: w} = pinned
const params = {dir: stagingDirOf(stateDir, session), entries: [{name: 'workspace', source: w.path, kind: w.kind, readOnly: false, dev: w.dev, ino: w.ino}]}
// bring-up's phases up to the container's steps, as container/launch-session.ts runs them
const up = await beginUp(
  {
    target: target('3090'),
    hostGpu: 0,
    objective: 'balanced',
    strict: false,
    name: session,
    owner: {uid: 65534, user: 'nobody'},
    pid: process.pid,
    hostname: hostname(),
    mpsAvailable: false,
    mpsOnHost: null,
  },
  deps,
)
await up.read()
await up.plan()
await up.record()
await up.makeDevices()
await up.runSteps([{impl: {...hanging, apply: (ctx, _p, prior) => hanging.apply(ctx, {...params, fds: {workspace: w.fd}}, prior)}, params}])
