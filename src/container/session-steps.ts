import {GPU_STEPS, type StepRegistry, stepRegistry} from '../apply/steps/registry.js'
import {startMpsStep} from '../apply/steps/mps-step.js'
import {LocalExecutor} from '../core/local-executor.js'
import {MpsControl, findMpsControl, mpsControlPathFrom} from '../host/mps.js'
import {type RuntimeFactory, startContainerStep} from './container-step.js'
import {stageMountsStep} from './stage-mounts-step.js'

/**
 * Every step a session's journal can name: the GPU's own, the MPS daemon's, the staging binds of a member's mounts and
 * the container's. The commands' one registry.
 */
export function sessionSteps(runtime: RuntimeFactory = dockerRuntime, mps: () => MpsControl = hostMps): StepRegistry {
  return stepRegistry([...GPU_STEPS, startMpsStep(mps), stageMountsStep(() => new LocalExecutor()), startContainerStep(runtime)])
}

async function dockerRuntime() {
  const {DockerRuntime} = await import('./runtime.js')
  return new DockerRuntime()
}

function hostMps(): MpsControl {
  return new MpsControl(new LocalExecutor(), findMpsControl(process.env) ?? mpsControlPathFrom(process.env))
}
