import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {profileChoices, versusPreferred} from '../../../src/plan/profile-choices.js'
import {hostModel, target} from './catalog-for-tests.js'

describe('profileChoices', () => {
  const on = (targetName: string, hostName: string) => {
    const host = planHostFromModel(hostModel(hostName))
    const t = target(targetName)
    const preferred = planCosplay(t, host)
    return {preferred, choices: profileChoices(t, host, preferred)}
  }

  it('4090 on h200: its own plan first, then every profile that holds 24 GiB, closest first', () => {
    const {preferred, choices} = on('4090', 'h200')
    expect(choices[0]).toEqual({profile: preferred.mig!.profile, plan: preferred, loss: 0})
    expect(choices.map((c) => c.profile).sort()).toEqual(['1g.35gb', '2g.35gb', '3g.71gb', '4g.71gb', '7g.141gb'])
    const losses = choices.slice(1).map((c) => c.loss)
    expect(losses).toEqual([...losses].sort((a, b) => a - b))
    expect(choices.find((c) => c.profile === '2g.35gb')!.loss).toBeGreaterThan(0)
    for (const c of choices) expect(c.plan.mig!.profile).toBe(c.profile)
  })

  it('a target that no slice holds keeps its own (largest) slice only', () => {
    const {preferred, choices} = on('a100-80g', 'a30')
    expect(choices).toEqual([{profile: preferred.mig!.profile, plan: preferred, loss: 0}])
  })

  it('a plan without a slice has no choices', () => {
    expect(on('3090', 'l40s').choices).toEqual([])
  })
})

describe('versusPreferred', () => {
  it("measures a plan's weighed axes against the preferred plan's figures", () => {
    const host = planHostFromModel(hostModel('h200'))
    const preferred = planCosplay(target('4090'), host)
    expect(versusPreferred(preferred, preferred).map((a) => a.errorPct)).toEqual(preferred.weighed.map(() => 0))
    const smaller = planCosplay(target('4090'), {...host, profiles: host.profiles!.filter((p) => p.name === '2g.35gb')})
    const fp32 = versusPreferred(smaller, preferred).find((a) => a.axis === 'fp32')!
    // in the plan's basis (measured by default): what each plan expects of its slice, not the target's figure
    const mine = smaller.weighed.find((a) => a.axis === 'fp32')!.expected
    const theirs = preferred.weighed.find((a) => a.axis === 'fp32')!.expected
    expect([mine, theirs]).toEqual([smaller.measured!.expected.fp32Tflops, preferred.measured!.expected.fp32Tflops])
    expect(fp32).toMatchObject({target: theirs, expected: mine})
    expect(fp32.errorPct).toBeCloseTo((mine / theirs - 1) * 100, 1)
  })
})
