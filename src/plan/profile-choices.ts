import type {Target} from '../catalog/types.js'
import {errorPct, round} from '../core/units.js'
import {planCosplay} from './plan-cosplay.js'
import {planScore} from './plan-score.js'
import type {Plan, PlanHost} from './types.js'

/** A MIG profile a target could take on a whole GPU, planned there as the planner would plan it. */
export type ProfileChoice = {
  readonly profile: string
  readonly plan: Plan
  /** how much further from the target this plan is than the preferred one (planScore difference, never below 0) */
  readonly loss: number
}

/**
 * The profiles a target could take when a whole-GPU layout cannot give it its preferred one (`--mix`): the
 * preferred plan's profile first (loss 0), then every other profile of the host model that holds the target's VRAM,
 * each planned as if it were the only one, closest first (then fewer memory slices, then the model's order). A
 * target that no slice holds keeps its preferred (the largest) slice only; a plan without a slice has no choices.
 */
export function profileChoices(target: Target, host: PlanHost, preferred: Plan): ProfileChoice[] {
  const mig = host.model.mig
  if (preferred.mig === null || mig === null) return []
  const own = {profile: preferred.mig.profile, plan: preferred, loss: 0}
  if (mig.profiles.every((p) => p.memoryGiB < target.vramGB)) return [own]
  const preferredScore = planScore(preferred)
  const others = mig.profiles
    .filter((p) => p.name !== own.profile && p.memoryGiB >= target.vramGB)
    .map((spec) => {
      // The layout is a whole GPU: every profile is free there, whatever a live GPU holds now.
      const plan = planCosplay(
        target,
        {...host, profiles: [{...spec, free: spec.maxInstances, total: spec.maxInstances}]},
        preferred.objective,
        {},
        {
          basis: preferred.basis ?? 'datasheet',
        },
      )
      return {choice: {profile: spec.name, plan, loss: Math.max(0, planScore(plan) - preferredScore)}, memorySlices: spec.memorySlices}
    })
    // Array.prototype.sort is stable: equal losses and sizes keep the model's order
    .sort((a, b) => a.choice.loss - b.choice.loss || a.memorySlices - b.memorySlices)
  return [own, ...others.map((o) => o.choice)]
}

/** The axes `plan` weighs, measured against `preferred`'s figures instead of the target's: what `plan` gives up. */
export function versusPreferred(plan: Plan, preferred: Plan): Plan['weighed'] {
  return plan.weighed.map((axis) => {
    const before = preferred.weighed.find((p) => p.axis === axis.axis)?.expected ?? axis.target
    return {...axis, target: before, errorPct: round(errorPct(axis.expected, before))}
  })
}
