import {InputError} from '../core/errors.js'

/** The GPU a `--host-gpu N` names, from a probe or a `-L` listing. */
export function pickGpu<G extends {readonly index: number}>(listing: {readonly gpus: readonly G[]}, index: number): G {
  const gpu = listing.gpus.find((g) => g.index === index)
  if (!gpu) {
    throw new InputError('GPU_INDEX_OUT_OF_RANGE', `there is no GPU ${index} on this host (it has ${listing.gpus.length}: 0-${listing.gpus.length - 1})`, {
      fix: ['list them: gpu-cosplay doctor'],
    })
  }
  return gpu
}
