import {GPU_STEPS, type StepRegistry, stepRegistry} from '../apply/steps/registry.js'
import {type RuntimeFactory, startContainerStep} from './container-step.js'

/** Every step a session's journal can name: the GPU's own and the container's. The commands' one registry. */
export function sessionSteps(runtime: RuntimeFactory = dockerRuntime): StepRegistry {
  return stepRegistry([...GPU_STEPS, startContainerStep(runtime)])
}

async function dockerRuntime() {
  const {DockerRuntime} = await import('./runtime.js')
  return new DockerRuntime()
}
