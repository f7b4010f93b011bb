import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {planRanks, type RankHost, SHM_MIB_PER_RANK} from '../../../src/plan/plan-ranks.js'
import type {PlanHost} from '../../../src/plan/types.js'
import {thrown} from '../support/thrown.js'
import {hostModel, target} from './catalog-for-tests.js'

const idle = (host: PlanHost): RankHost => ({host, held: {holders: []}})
// as plan --on sees a model: a current driver, with the MPS control binary
const model = (name: string) => [idle(planHostFromModel(hostModel(name), {mpsAvailable: true}))]
const OPTIONS = {strict: false}

/** GPU `index` of a box of `name`s (MIG on), with `free` of each profile as the driver would say (default: idle) */
function gpu(name: string, index: number, free: Record<string, number> = {}): RankHost {
  const host = planHostFromModel(hostModel(name), {mpsAvailable: true})
  return idle({
    ...host,
    index,
    migEnabled: true,
    profiles: host.profiles!.map((p) => ({...p, free: free[p.name] ?? free.others ?? p.free})),
  })
}

describe('planRanks', () => {
  it('2 x 3090 on an H200: two of the slice one 3090 gets, on the one GPU, joined by host shared memory', () => {
    const single = planCosplay(target('3090'), planHostFromModel(hostModel('h200'), {mpsAvailable: true}))
    const plan = planRanks(target('3090'), model('h200'), 'balanced', 2, OPTIONS)
    expect(plan.mig).toEqual(single.mig)
    expect(plan.expected).toEqual(single.expected)
    expect(plan.ranks).toMatchObject({count: 2, gpus: [{index: null, ranks: 2}], shmMiB: 2 * SHM_MIB_PER_RANK})
    expect(plan.ranks!.link).toMatchObject({kind: 'mig-instances', acrossGpus: false})
    expect(plan.ranks!.link.note).toContain('no NVLink or P2P')
    expect(plan.ranks!.link.note).toContain('gloo')
  })

  it('as many as the profile has room for fit; one more is refused in one line that says how many GPUs it would take', () => {
    const t4 = planCosplay(target('t4'), planHostFromModel(hostModel('h200'), {mpsAvailable: true}))
    const room = hostModel('h200').mig!.profiles.find((p) => p.name === t4.mig!.profile)!.maxInstances
    expect(planRanks(target('t4'), model('h200'), 'balanced', room, OPTIONS).ranks!.gpus).toEqual([{index: null, ranks: room}])
    const error = thrown(() => planRanks(target('t4'), model('h200'), 'balanced', room + 1, OPTIONS))
    expect(error.code).toBe('TOO_MANY_RANKS')
    expect(error.exit).toBe(3)
    expect(error.message).toContain(`${room} of ${t4.mig!.profile}`)
    expect(error.message).toContain(`fit on one NVIDIA H200`)
    expect(error.message).toContain(`${room + 1} need 2`)
    expect(error.message).not.toContain('\n')
  })

  it('takes the next-closest profile that fits N times when the preferred one does not, and says so', () => {
    const host = planHostFromModel(hostModel('h200'), {mpsAvailable: true})
    const t = target('4090')
    const preferred = planCosplay(t, host)
    const preferredRoom = hostModel('h200').mig!.profiles.find((p) => p.name === preferred.mig!.profile)!.maxInstances
    const plan = planRanks(t, model('h200'), 'balanced', preferredRoom + 1, OPTIONS)
    expect(plan.mig!.profile).not.toBe(preferred.mig!.profile)
    expect(hostModel('h200').mig!.profiles.find((p) => p.name === plan.mig!.profile)!.maxInstances).toBeGreaterThan(preferredRoom)
    expect(plan.warnings.some((w) => w.includes(`do not fit; each rank takes ${plan.mig!.profile}`))).toBe(true)
  })

  it('never makes ranks of one session from two models, though their profiles share a name (A100 and H100 2g.20gb)', () => {
    // a T4 takes 2g.20gb on an A100 80GB, and 1g.20gb or 2g.20gb on an H100 when its own does not fit
    const profile = '2g.20gb'
    for (const m of ['a100_80g', 'h100_sxm']) expect(hostModel(m).mig!.profiles.map((p) => p.name)).toContain(profile)
    // without MPS (whose thread share differs by model) the two shapes read the same
    const noMps = (h: RankHost): RankHost => ({...h, host: {...h.host, mpsAvailable: false}})
    const hosts = [gpu('a100_80g', 0, {[profile]: 1, others: 0}), gpu('h100_sxm', 1, {[profile]: 1, others: 0})].map(noMps)
    expect(thrown(() => planRanks(target('t4'), hosts, 'balanced', 2, OPTIONS)).code).toBe('RANKS_DO_NOT_FIT')
    // two of one model's are placed as usual
    const twoH100s = [gpu('h100_sxm', 0, {[profile]: 1, others: 0}), gpu('h100_sxm', 1, {[profile]: 1, others: 0})].map(noMps)
    const plan = planRanks(target('t4'), twoH100s, 'balanced', 2, OPTIONS)
    expect([plan.mig!.profile, plan.ranks!.gpus]).toEqual([
      profile,
      [
        {index: 0, ranks: 1},
        {index: 1, ranks: 1},
      ],
    ])
  })

  it('on a live GPU only the free slices count', () => {
    const profile = planCosplay(target('3090'), planHostFromModel(hostModel('h200'), {mpsAvailable: true})).mig!.profile
    const busy = [gpu('h200', 0, {[profile]: 1, others: 0})]
    const taken = thrown(() => planRanks(target('3090'), busy, 'balanced', 2, OPTIONS))
    // the GPU holds two when its other slices are free: up --wait waits for that
    expect(taken.code).toBe('RANKS_DO_NOT_FIT')
    expect(taken.message).toMatch(/^2 x NVIDIA GeForce RTX 3090 do not fit: 1 of /)
    expect(planRanks(target('3090'), [...busy, gpu('h200', 1, {[profile]: 1, others: 0})], 'balanced', 2, OPTIONS).ranks!.gpus).toEqual([
      {index: 0, ranks: 1},
      {index: 1, ranks: 1},
    ])
  })

  it('on an 8-GPU box, 4 of a target only a whole slice holds spread one per GPU, in index order', () => {
    const box = Array.from({length: 8}, (_, i) => gpu('h200', i))
    const plan = planRanks(target('a100-80g'), box, 'balanced', 4, OPTIONS)
    expect(plan.ranks!.gpus).toEqual([0, 1, 2, 3].map((index) => ({index, ranks: 1})))
    expect(plan.ranks!.link.acrossGpus).toBe(true)
    expect(plan.host.index).toBe(0)
  })

  it('packs onto the GPU with the most room first, spilling over the fewest GPUs', () => {
    const profile = planCosplay(target('t4'), planHostFromModel(hostModel('h200'), {mpsAvailable: true})).mig!.profile
    const box = [gpu('h200', 0, {[profile]: 2}), gpu('h200', 1, {[profile]: 7}), gpu('h200', 2, {[profile]: 5})]
    expect(planRanks(target('t4'), box, 'balanced', 6, OPTIONS).ranks!.gpus).toEqual([{index: 1, ranks: 6}])
    expect(planRanks(target('t4'), box, 'balanced', 9, OPTIONS).ranks!.gpus).toEqual([
      {index: 1, ranks: 7},
      {index: 2, ranks: 2},
    ])
    expect(planRanks(target('t4'), box, 'balanced', 9, OPTIONS).host.index).toBe(1)
  })

  it('a GPU that refuses (MIG pending a reset) is left out, and named when nothing else fits', () => {
    const pending = {...gpu('h200', 0), host: {...gpu('h200', 0).host, migBlocker: 'pending-reset' as const}}
    const error = thrown(() => planRanks(target('3090'), [pending], 'balanced', 2, OPTIONS))
    expect(error.code).toBe('RANKS_DO_NOT_FIT')
    expect(error.message).toContain('GPU 0: ')
    expect(error.message).toContain('pending a GPU reset')
    const plan = planRanks(target('3090'), [pending, gpu('h200', 1)], 'balanced', 2, OPTIONS)
    expect(plan.ranks!.gpus).toEqual([{index: 1, ranks: 2}])
  })

  it('without MIG: MPS shares of the whole GPU, as many as its threads and memory hold', () => {
    const plan = planRanks(target('t4'), model('l40s'), 'balanced', 2, OPTIONS)
    expect(plan.mig).toBeNull()
    expect(plan.mps).not.toBeNull()
    expect(plan.ranks!.link.kind).toBe('mps-clients')
    expect(plan.ranks!.link.note).toContain('NCCL_MULTI_RANK_GPU_ENABLE')
    const room = Math.min(Math.floor(100 / plan.mps!.activeThreadPercentage), Math.floor((hostModel('l40s').memoryGiB * 1024) / plan.mps!.pinnedMemLimitMiB))
    expect(planRanks(target('t4'), model('l40s'), 'balanced', room, OPTIONS).ranks!.count).toBe(room)
    expect(thrown(() => planRanks(target('t4'), model('l40s'), 'balanced', room + 1, OPTIONS)).code).toBe('TOO_MANY_RANKS')
  })

  it('without MPS either: a whole GPU per rank', () => {
    const whole = (index: number) => idle({...planHostFromModel(hostModel('l40s'), {mpsAvailable: false}), index})
    const plan = planRanks(target('t4'), [whole(0), whole(1)], 'balanced', 2, OPTIONS)
    expect(plan.ranks!.link).toMatchObject({kind: 'whole-gpus', acrossGpus: true})
    expect(plan.ranks!.gpus).toEqual([
      {index: 0, ranks: 1},
      {index: 1, ranks: 1},
    ])
    expect(thrown(() => planRanks(target('t4'), [whole(0)], 'balanced', 2, OPTIONS)).code).toBe('TOO_MANY_RANKS')
  })
})
