import {InputError} from '../core/errors.js'
import type {HostGpu, HostProbe} from './types.js'

export function pickGpu(probe: HostProbe, index: number): HostGpu {
  const gpu = probe.gpus.find((g) => g.index === index)
  if (!gpu) {
    throw new InputError('GPU_INDEX_OUT_OF_RANGE', `there is no GPU ${index} on this host (it has ${probe.gpus.length}: 0-${probe.gpus.length - 1})`, {
      fix: ['list them: gpu-cosplay doctor'],
    })
  }
  return gpu
}
