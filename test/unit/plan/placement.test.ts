import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {describePlacement, rankCandidates} from '../../../src/plan/placement.js'
import {planScore} from '../../../src/plan/plan-score.js'
import type {Plan} from '../../../src/plan/types.js'
import {hostModel, target} from './catalog-for-tests.js'

const planOn = (host: string, gpu: string, objective: Plan['objective'] = 'balanced') => planCosplay(target(gpu), planHostFromModel(hostModel(host)), objective)
const axis = (expected: number, wanted: number) => ({axis: 'fp32' as const, expected, target: wanted, errorPct: ((expected - wanted) / wanted) * 100})

describe('planScore', () => {
  it('is 0 for an exact plan and the same for 2x too fast and 2x too slow', () => {
    expect(planScore({weighed: [axis(10, 10)]})).toBe(0)
    expect(planScore({weighed: [axis(20, 10)]})).toBeCloseTo(planScore({weighed: [axis(5, 10)]}), 12)
  })

  it('is the RMS over the weighed axes', () => {
    const score = planScore({weighed: [axis(20, 10), axis(10, 10)]})
    expect(score).toBeCloseTo(Math.LN2 / Math.SQRT2, 12)
  })
})

describe('rankCandidates', () => {
  const refused = {code: 'MIG_NO_FREE_SLOT', message: 'GPU 0 has no free MIG slice'}

  it('puts the smallest score first, refused hosts last, and keeps the named order on a tie', () => {
    const near = {weighed: [axis(10.5, 10)]}
    const far = {weighed: [axis(14, 10)]}
    const ranked = rankCandidates([
      {host: 'full', plan: null, refused},
      {host: 'a', plan: far, refused: null},
      {host: 'b', plan: near, refused: null},
      {host: 'c', plan: near, refused: null},
    ])
    expect(ranked.map((c) => c.host)).toEqual(['b', 'c', 'a', 'full'])
    expect(ranked.at(-1)?.score).toBeNull()
  })

  it('ranks real plans by the score the planner gives them: a T4 matched for FP32 on an H200 beats its balanced plan on an A30', () => {
    const fp32 = planOn('h200', 't4', 'fp32')
    const balanced = planOn('a30', 't4', 'balanced')
    expect(planScore(fp32)).toBeLessThan(planScore(balanced))
    expect(
      rankCandidates([
        {host: 'a30', plan: balanced, refused: null},
        {host: 'h200', plan: fp32, refused: null},
      ]).map((c) => c.host),
    ).toEqual(['h200', 'a30'])
  })

  it('says which host was chosen and what every other one offered', () => {
    const ranked = rankCandidates([
      {host: 'far', plan: {weighed: [axis(5, 10)]}, refused: null},
      {host: 'near', plan: {weighed: [axis(10.1, 10)]}, refused: null},
      {host: 'full', plan: null, refused},
    ])
    expect(describePlacement(ranked)).toBe('Chose near, the closest plan (FP32 +1.0%); far: FP32 -50.0%; full: MIG_NO_FREE_SLOT')
  })
})
