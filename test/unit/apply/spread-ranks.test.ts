/**
 * A session spread over several GPUs (up --count N): which record holds which rank, and which device each rank is,
 * as the container, ps and verify read them from the first record.
 */
import {describe, expect, it} from '@jest/globals'

import {deviceOfRank, holdsRank, isSessionPart, ranksHereOf, slotOfRank} from '../../../src/apply/gpu-book.js'
import type {SessionRecord} from '../../../src/apply/gpu-book.js'

const slot = (uuid: string | null, gi: number) => ({profile: '3g.71gb', profileId: 9, gpuInstanceId: gi, computeInstanceId: 0, uuid})
const ranks = {
  count: 4,
  gpus: [
    {index: 0, ranks: 2},
    {index: 1, ranks: 2},
  ],
  link: {kind: 'mig-instances', acrossGpus: true, note: ''},
  shmMiB: 4096,
}

/** ranks 0-1 on GPU-A (the first record), 2-3 on GPU-B (its part) */
const first = {
  name: 'quad',
  plan: {ranks},
  mig: slot('MIG-a0', 1),
  moreSlices: [slot('MIG-a1', 2)],
  spread: {ranksHere: 2, parts: [{gpuUuid: 'GPU-B', gpuIndex: 1, firstRank: 2, count: 2, devices: ['MIG-b2', 'MIG-b3']}]},
} as unknown as SessionRecord
const part = {
  name: 'quad',
  plan: {ranks},
  mig: slot('MIG-b2', 1),
  moreSlices: [slot('MIG-b3', 2)],
  partOf: {gpuUuid: 'GPU-A', createdAt: 'then', firstRank: 2, count: 2},
} as unknown as SessionRecord

describe('a spread session', () => {
  it('gives each record its own run of ranks, and each rank its slot in the record of its GPU', () => {
    expect([ranksHereOf(first), ranksHereOf(part)]).toEqual([2, 2])
    expect([0, 1, 2, 3].map((r) => [holdsRank(first, r), holdsRank(part, r)])).toEqual([
      [true, false],
      [true, false],
      [false, true],
      [false, true],
    ])
    expect([0, 1, 2, 3].map((r) => slotOfRank(first, r)?.uuid ?? null)).toEqual(['MIG-a0', 'MIG-a1', null, null])
    expect([0, 1, 2, 3].map((r) => slotOfRank(part, r)?.uuid ?? null)).toEqual([null, null, 'MIG-b2', 'MIG-b3'])
    expect([isSessionPart(first), isSessionPart(part)]).toEqual([false, true])
  })

  it('names every rank’s device from its first record: its own slices, then what its parts recorded', () => {
    expect([0, 1, 2, 3, 4].map((r) => deviceOfRank(first, r, 'GPU-A'))).toEqual(['MIG-a0', 'MIG-a1', 'MIG-b2', 'MIG-b3', null])
    // a part's device not made yet is unknown, not the first GPU
    const unmade = {...first, spread: {ranksHere: 2, parts: [{...first.spread!.parts[0], devices: [null, null]}]}} as SessionRecord
    expect(deviceOfRank(unmade, 2, 'GPU-A')).toBeNull()
    // MPS shares of whole GPUs: each rank is its GPU
    const shares = {...first, mig: null, moreSlices: undefined, spread: {ranksHere: 2, parts: [{...first.spread!.parts[0], devices: ['GPU-B', 'GPU-B']}]}}
    expect([0, 1, 2, 3].map((r) => deviceOfRank(shares as SessionRecord, r, 'GPU-A'))).toEqual(['GPU-A', 'GPU-A', 'GPU-B', 'GPU-B'])
  })

  it('hands the container every rank’s device, on both GPUs, in rank order', async () => {
    const {containerSpecFor} = await import('../../../src/container/session-container.js')
    const {containerPrivileges} = await import('../../../src/container/container-privileges.js')
    const {placeRanks} = await import('../../../src/plan/plan-ranks.js')
    const {planHostFromModel} = await import('../../../src/plan/plan-host.js')
    const {target, hostModel} = await import('../plan/catalog-for-tests.js')
    const model = planHostFromModel(hostModel('h200'))
    const hosts = [0, 1].map((index) => ({host: {...model, index}, held: {holders: []}}))
    const placed = placeRanks(target('a6000'), hosts, 'balanced', 4, {strict: false})
    expect(placed.gpus.map((g) => [g.host.index, g.ranks])).toEqual([
      [0, 2],
      [1, 2],
    ])
    // GPUs alike are planned once; each GPU's plan still names its own index
    expect(placed.gpus.map((g) => g.plan.host.index)).toEqual([0, 1])
    const session = {...first, owner: {uid: 1234, user: 'alice'}, target: {key: 'rtx_a6000', name: 'NVIDIA RTX A6000'}, plan: placed.gpus[0].plan}
    const options = {
      image: {id: 'sha256:img', isCosplayImage: true, env: {}},
      privileges: containerPrivileges({sudo: false, isCosplayImage: true, inEngine: false, owner: {uid: 1234, gid: 1234}}),
      owner: {uid: 1234, gid: 1234, user: 'alice'},
      authorizedKeys: [],
      workspace: null,
      volumes: [],
      stateDir: '/state',
      sshPort: null,
      sshBind: '127.0.0.1',
      shmSizeBytes: null,
      hasTf32: false,
      packageRoot: '/pkg',
    } as never
    const spec = containerSpecFor(session as SessionRecord, {index: 0, uuid: 'GPU-A', memoryTotalMiB: 143771} as never, options)
    expect(spec.deviceIds).toEqual(['MIG-a0', 'MIG-a1', 'MIG-b2', 'MIG-b3'])
    expect(JSON.parse(spec.env.GPU_COSPLAY_RANKS).map((r: {uuid: string}) => r.uuid)).toEqual(['MIG-a0', 'MIG-a1', 'MIG-b2', 'MIG-b3'])
    expect(spec.shmSizeBytes).toBe(4 * 1024 ** 3)
  })
})
