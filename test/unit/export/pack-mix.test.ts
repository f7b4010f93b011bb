import {fits, migProfileSpec} from '../../../src/export/mig-layout.js'
import {chooseMixProfiles, type MixRequest} from '../../../src/export/pack-mix.js'
import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {profileChoices} from '../../../src/plan/profile-choices.js'
import {hostModel, target} from '../plan/catalog-for-tests.js'
import {thrown} from '../support/thrown.js'

/** `request('a', 2, '3g.71gb:0 2g.35gb:0.1')`: a target asked twice, its choices closest first with their losses */
const request = (asked: string, count: number, choices: string): MixRequest => ({
  asked,
  memoryGiB: 1,
  count,
  choices: choices.split(' ').map((c) => ({profile: c.split(':')[0], loss: Number(c.split(':')[1])})),
})

describe('chooseMixProfiles (synthetic losses, h200 placements)', () => {
  const h200 = hostModel('h200')

  it.each([
    ['keeps every preferred profile where they fit together', [request('a', 2, '2g.35gb:0 1g.35gb:0.1'), request('b', 1, '3g.71gb:0')], [0, 0]],
    // a keeping 3g.71gb x2 takes the whole GPU; a on 2g.35gb x2 leaves room for b's 3g.71gb
    [
      'searches the mix as a whole: the first target gives up its preferred slice where that loses least in total',
      [request('a', 2, '3g.71gb:0 2g.35gb:0.1'), request('b', 1, '3g.71gb:0 2g.35gb:0.15')],
      [1, 0],
    ],
    // a on 1g.35gb costs 0.25 once; b on 1g.18gb costs 0.1 three times (0.3)
    ['weighs a loss by the instances that take it', [request('a', 1, '4g.71gb:0 1g.35gb:0.25'), request('b', 3, '2g.35gb:0 1g.18gb:0.1')], [1, 0]],
    ['breaks a tie in favour of the choice listed first (deterministic)', [request('a', 3, '3g.71gb:0 2g.35gb:0.2 1g.35gb:0.2')], [1]],
  ])('%s', (_, mix, picks) => {
    expect(chooseMixProfiles(h200, mix)).toEqual(picks)
  })

  it('refuses, in one line naming the instance, only where no combination fits', () => {
    const error = thrown(() => chooseMixProfiles(h200, [request('a', 2, '3g.71gb:0'), request('b', 1, '1g.18gb:0')]))
    expect({code: error.code, exit: error.exit}).toEqual({code: 'MIX_DOES_NOT_FIT', exit: 2})
    expect(error.message).toMatch(/^b #1: .* beside a x2$/)
  })
})

// Every pair of these targets, 1 to 3 of each, on each MIG host: the search finds the least total loss a brute
// force over all combinations finds, and refuses exactly where the brute force finds no layout.
describe('chooseMixProfiles against a brute force (catalog targets, their real choices)', () => {
  const TARGETS = ['t4', '3090', '4090', 'l4', 'a40', 'a100-40g']
  const cases = ['h200', 'h100-sxm', 'a100-40g', 'a30'].flatMap((h) =>
    TARGETS.flatMap((a, i) => TARGETS.slice(i + 1).flatMap((b) => [1, 2, 3].flatMap((na) => [1, 2, 3].map((nb) => [h, a, na, b, nb] as const)))),
  )

  it.each(cases)('on %s: %s x%d with %s x%d', (h, a, na, b, nb) => {
    const model = hostModel(h)
    const host = planHostFromModel(model)
    const requests = [
      [a, na],
      [b, nb],
    ].map(([name, count]) => {
      const t = target(name as string)
      return {asked: t.key, memoryGiB: t.vramGB, count: count as number, choices: profileChoices(t, host, planCosplay(t, host))}
    })
    let brute = Number.POSITIVE_INFINITY
    for (const x of requests[0].choices) {
      for (const y of requests[1].choices) {
        const profiles = [x.profile, y.profile]
        const instances = requests.flatMap((r, i) => Array.from({length: r.count}, () => migProfileSpec(model, profiles[i])))
        if (fits(model, instances)) brute = Math.min(brute, na * x.loss + nb * y.loss)
      }
    }
    if (brute === Number.POSITIVE_INFINITY) {
      expect(thrown(() => chooseMixProfiles(model, requests)).code).toBe('MIX_DOES_NOT_FIT')
      return
    }
    const picks = chooseMixProfiles(model, requests)
    const loss = requests.reduce((sum, r, i) => sum + r.count * r.choices[picks[i]].loss, 0)
    expect(loss).toBeCloseTo(brute, 9)
  })
})
