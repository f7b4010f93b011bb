import type {Plan} from './types.js'

/**
 * How far a plan is from its target: the RMS of log(expected/target) over the axes its objective weighs (log
 * ratios make 2x too fast and 2x too slow equally bad; 0 is exact). The planner minimises it to pick a slice and a
 * clock, and `up --host a,b` ranks boxes by it, so "closest" means the same for both.
 */
export function planScore(plan: Pick<Plan, 'weighed'>): number {
  if (plan.weighed.length === 0) return 0
  const logs = plan.weighed.map((a) => Math.log(a.expected / a.target))
  return Math.sqrt(logs.reduce((sum, e) => sum + e * e, 0) / logs.length)
}
