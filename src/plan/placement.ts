import {planScore} from './plan-score.js'
import type {Plan} from './types.js'

/** One box `up --host a,b` could use: its plan there, or why it cannot take the session. */
export type PlacementCandidate = {
  readonly host: string
  readonly plan: Pick<Plan, 'weighed'> | null
  readonly refused: {readonly code: string; readonly message: string} | null
}

export type RankedCandidate = PlacementCandidate & {
  /** the planner's score for the plan (RMS of the weighed axes' log ratios; 0 = exact); null when refused */
  readonly score: number | null
}

/** Best first: the smallest score; equal scores keep the order the hosts were named in; refused hosts last. */
export function rankCandidates(candidates: readonly PlacementCandidate[]): RankedCandidate[] {
  const ranked = candidates.map((c) => ({...c, score: c.plan ? planScore(c.plan) : null}))
  // Array.prototype.sort is stable
  return ranked.sort((a, b) => (a.score === null || b.score === null ? (a.score === null ? 1 : 0) - (b.score === null ? 1 : 0) : a.score - b.score))
}

const AXIS = {fp32: 'FP32', bf16: 'BF16', 'fp16-tensor': 'FP16 tensor', bandwidth: 'bandwidth'} as const

/** "FP32 -1.2%, bandwidth +4.0%": a plan's weighed errors, as the plan table shows them */
export function weighedErrors(plan: Pick<Plan, 'weighed'>): string {
  return plan.weighed.map((a) => `${AXIS[a.axis]} ${a.errorPct > 0 ? '+' : ''}${a.errorPct.toFixed(1)}%`).join(', ')
}

/** One line saying which host was chosen and what the others offered. */
export function describePlacement(ranked: readonly RankedCandidate[]): string {
  const [best, ...others] = ranked
  const offer = (c: RankedCandidate) => (c.plan === null ? `${c.host}: ${c.refused?.code ?? 'refused'}` : `${c.host}: ${weighedErrors(c.plan)}`)
  const rest = others.length > 0 ? `; ${others.map(offer).join('; ')}` : ''
  return `Chose ${best.host}, the closest plan (${best.plan ? weighedErrors(best.plan) : '-'})${rest}`
}
