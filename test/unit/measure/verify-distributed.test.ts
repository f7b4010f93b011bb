import {describe, expect, it} from '@jest/globals'

import type {SessionAccess} from '../../../src/client/session-access.js'
import {requireRanks, verifyDistributed} from '../../../src/measure/verify-distributed.js'
import {renderVerifyDistributed} from '../../../src/render/render-verify.js'
import {thrown} from '../support/thrown.js'

const slot = (uuid: string) => ({profile: '1g.35gb', profileId: 15, gpuInstanceId: 5, computeInstanceId: 0, uuid})
const access = (count: number) =>
  ({
    container: {name: 'gpu-cosplay-duo', session: 'duo'},
    session: {plan: count > 1 ? {ranks: {count}} : {}, mig: slot('MIG-a'), moreSlices: count > 1 ? [slot('MIG-b')] : undefined},
  }) as unknown as SessionAccess

const rank = (n: number, uuid: string, extra: object = {}) => ({
  rank: n,
  device: 'cpu (the costume: NVIDIA GeForce RTX 3090)',
  uuid,
  mpsPipe: `/run/gpu-cosplay/mps/rank-${n}/pipe`,
  deviceCount: null,
  memoryLimitMiB: 23865,
  allReduce: {bytes: 16777216, ms: 9.2, busGBs: 1.8},
  ddpStepMs: 5.5,
  ok: true,
  error: null,
  ...extra,
})
const report = (ranks: object[], extra: object = {}) => ({
  exitCode: 0,
  stderr: '',
  stdout: `launcher noise\n${JSON.stringify({ok: true, error: null, backend: 'gloo', why: 'torch has no CUDA here', kind: 'cpu', nccl: null, torch: '1.13.0', count: 2, ranks, ...extra})}`,
})

describe('verifyDistributed', () => {
  it("passes when every rank did both and reached the session's own device for it", () => {
    const r = verifyDistributed(access(2), report([rank(0, 'MIG-a'), rank(1, 'MIG-b')]))
    expect({ok: r.ok, devicesMatch: r.devicesMatch, session: r.session}).toEqual({ok: true, devicesMatch: true, session: 'duo'})
    expect(renderVerifyDistributed(r)).toMatch(/duo: 2 ranks, backend gloo[\s\S]*MIG-b[\s\S]*PASS$/)
  })

  it("fails a rank that reached another rank's device, and says so", () => {
    const r = verifyDistributed(access(2), report([rank(0, 'MIG-a'), rank(1, 'MIG-a')]))
    expect({ok: r.ok, devicesMatch: r.devicesMatch}).toEqual({ok: false, devicesMatch: false})
    expect(renderVerifyDistributed(r)).toContain("reached another device than the session's own")
  })

  it('fails when a rank failed, or one is missing', () => {
    expect(verifyDistributed(access(2), report([rank(0, 'MIG-a'), rank(1, 'MIG-b', {ok: false, error: 'RuntimeError: x'})], {ok: false})).ok).toBe(false)
    expect(verifyDistributed(access(2), report([rank(0, 'MIG-a')])).ok).toBe(false)
  })

  it('no report is one error naming the session; a session of one device is refused before anything runs', () => {
    expect(thrown(() => verifyDistributed(access(2), {exitCode: 1, stdout: 'Traceback', stderr: 'ImportError: x'}))).toMatchObject({code: 'VERIFY_FAILED'})
    expect(thrown(() => requireRanks(access(1)))).toMatchObject({code: 'NOT_DISTRIBUTED', exit: 2})
    expect(requireRanks(access(2))).toBe(2)
  })

  it("checks a spread session's ranks on other GPUs against the devices its parts recorded", () => {
    const spread = {
      container: {name: 'gpu-cosplay-quad', session: 'quad'},
      session: {
        plan: {ranks: {count: 3}},
        mig: slot('MIG-a'),
        spread: {ranksHere: 1, parts: [{gpuUuid: 'GPU-B', gpuIndex: 1, firstRank: 1, count: 2, devices: ['MIG-b', 'MIG-c']}]},
      },
    } as unknown as SessionAccess
    const three = (last: string) => verifyDistributed(spread, report([rank(0, 'MIG-a'), rank(1, 'MIG-b'), rank(2, last)], {count: 3}))
    expect(three('MIG-c').devicesMatch).toBe(true)
    expect(three('MIG-a')).toMatchObject({devicesMatch: false, ok: false})
  })
})
