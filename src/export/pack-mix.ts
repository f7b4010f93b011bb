import type {HostModel, MigProfileSpec} from '../catalog/types.js'
import {InputError} from '../core/errors.js'
import {fits, migProfileSpec} from './mig-layout.js'

/** One `--mix` entry: a target, how many instances of it, and the profiles it could take. */
export type MixRequest = {
  /** what the user typed, for messages (`3090`, `t4`) */
  readonly asked: string
  /** the memory each of its slices must hold: the target's VRAM, or the largest slice's where none holds that */
  readonly memoryGiB: number
  readonly count: number
  /** closest first, the target's preferred profile at the head (profileChoices); loss >= 0 */
  readonly choices: readonly {readonly profile: string; readonly loss: number}[]
}

const EPSILON = 1e-9

/**
 * For each request, the index of the choice it takes: one profile per request (its instances are one card, so
 * they are alike), such that every instance can be placed on one GPU of the model (fits: the MIG placement
 * rules) with the least total loss (count x loss). A branch-and-bound search over the requests in order and
 * their choices closest first; a partial layout that does not fit, or that already loses as much as the best
 * found, is cut. Ties keep the first found, so the result is deterministic, and where the preferred profiles
 * fit together (loss 0) they are the answer. Refuses, naming why, only where no combination fits.
 */
export function chooseMixProfiles(model: HostModel, requests: readonly MixRequest[]): number[] {
  const best = search(model, requests)
  if (best === null) throw whyNothingFits(model, requests)
  return best
}

function search(model: HostModel, requests: readonly MixRequest[]): number[] | null {
  const specs = requests.map((r) => r.choices.map((c) => migProfileSpec(model, c.profile)))
  const best: {picks: number[] | null; loss: number} = {picks: null, loss: Number.POSITIVE_INFINITY}
  const visit = (i: number, picks: readonly number[], instances: readonly MigProfileSpec[], loss: number): void => {
    if (loss >= best.loss - EPSILON) return
    if (i === requests.length) {
      best.picks = [...picks]
      best.loss = loss
      return
    }
    requests[i].choices.forEach((choice, c) => {
      const next = [...instances, ...Array.from({length: requests[i].count}, () => specs[i][c])]
      if (fits(model, next)) visit(i + 1, [...picks, c], next, loss + requests[i].count * choice.loss)
    })
  }
  visit(0, [], [], 0)
  return best.picks
}

/**
 * The first instance, in the order the mix names them, from which no layout holds the mix, and why: more
 * instances of one target than the GPU has slices for its VRAM, more instances than the GPU has at all, or no
 * slice that holds this target's VRAM is left beside the ones before it.
 */
function whyNothingFits(model: HostModel, requests: readonly MixRequest[]): InputError {
  const fix = {fix: ['ask for fewer instances in --mix', 'or spread the mix over two GPUs: export one layout per GPU']}
  for (const [i, request] of requests.entries()) {
    for (let nth = 1; nth <= request.count; nth++) {
      const prefix = [...requests.slice(0, i), {...request, count: nth}]
      if (search(model, prefix) !== null) continue
      if (search(model, [{...request, count: nth}]) === null) {
        const most = nth - 1
        return new InputError(
          'MIX_DOES_NOT_FIT',
          `${request.asked} x${request.count}: one ${model.name} holds at most ${most} MIG slice${most === 1 ? '' : 's'} of ${request.memoryGiB} GiB or more`,
          fix,
        )
      }
      const most = mostInstances(model)
      if (totalOf(prefix) > most)
        return new InputError('MIX_DOES_NOT_FIT', `the mix asks for ${totalOf(requests)} MIG instances; one ${model.name} holds at most ${most}`, fix)
      const before = [...requests.slice(0, i), ...(nth > 1 ? [{...request, count: nth - 1}] : [])].map((r) => `${r.asked} x${r.count}`)
      return new InputError(
        'MIX_DOES_NOT_FIT',
        `${request.asked} #${nth}: no MIG slice of ${request.memoryGiB} GiB or more is left on one ${model.name} beside ${before.join(', ')}`,
        fix,
      )
    }
  }
  // search(requests) found nothing, so some prefix above failed
  throw new Error('whyNothingFits: the whole mix fits')
}

/** How many MIG instances the GPU holds at most: its smallest profile, as many times as fit. */
function mostInstances(model: HostModel): number {
  const smallest = [...(model.mig?.profiles ?? [])].sort((a, b) => a.memorySlices - b.memorySlices || b.maxInstances - a.maxInstances)[0]
  if (smallest === undefined) return 0
  let count = 0
  while (fits(model, new Array<MigProfileSpec>(count + 1).fill(smallest))) count++
  return count
}

function totalOf(requests: readonly MixRequest[]): number {
  return requests.reduce((sum, r) => sum + r.count, 0)
}
