import {afterAll, describe, expect, it, jest} from '@jest/globals'

import type {PlanResult} from '../../src/client/plan-for.js'
import {cleanupTemps, runCli, runJson, Sim} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

const sorted = (o: object) => Object.keys(o).sort()

describe('plan --on (no GPU)', () => {
  it('prints the fields the issue lists', () => {
    const {exitCode, json, stderr} = runJson<PlanResult>(['plan', '3090', '--on', 'h200'])
    expect(exitCode).toBe(0)
    expect(stderr).toBe('')
    expect(sorted(json.target)).toEqual(sorted({key: 0, name: 0, fp32Tflops: 0, bf16Tflops: 0, bandwidthGBs: 0, vramGB: 0, tdpW: 0}))
    expect(json.target).toMatchObject({key: 'rtx_3090', vramGB: 24, tdpW: 350})
    expect(sorted(json.host)).toEqual(['index', 'model', 'name', 'smCount'])
    expect(json.host).toMatchObject({index: null, model: 'h200_sxm'})
    expect(sorted(json.mig!)).toEqual(['memoryGiB', 'memorySlices', 'profile', 'profileId', 'smCount'])
    expect(json.clockMHz === null || typeof json.clockMHz === 'number').toBe(true)
    // a 1g slice shaped by MPS leaves the whole GPU's power limit alone (it would throttle every tenant)
    expect(json.powerLimitW).toBeNull()
    expect(json.gpuWide).toMatchObject({clockLock: false, powerLimit: false})
    // memory as the card has it: the pinned limit is what a 3090 reports to CUDA (24268 of 24576 MiB)
    expect(json.mps).toMatchObject({smCount: json.smCount, pinnedMemLimitMiB: 24268})
    expect(json.memory).toMatchObject({vramMiB: 24576, cudaTotalMiB: 24268, hardLimitMiB: 24268, hardLimitBy: 'mps'})
    expect(json.vramCapGiB).toBe(24)
    expect(json.basis).toBe('measured')
    expect(sorted(json.measured!)).toEqual(['errors', 'expected', 'hostRates', 'methods', 'target', 'targetBasis', 'targetSources'])
    expect(sorted(json.expected)).toEqual(['bandwidthGBs', 'bf16Tflops', 'fp32Tflops', 'vramGB'])
    expect(Array.isArray(json.warnings)).toBe(true)
    expect(json.warnings.every((w) => typeof w === 'string')).toBe(true)
  })

  it('--match fp32 lands within 3% of what the card measures; with --datasheet, of its datasheet', () => {
    const {json} = runJson<PlanResult>(['plan', '3090', '--on', 'h200', '--match', 'fp32'])
    const m = json.measured!
    expect(m.target.fp32Tflops).toBe(24.625)
    expect(Math.abs(m.expected.fp32Tflops - m.target.fp32Tflops) / m.target.fp32Tflops).toBeLessThanOrEqual(0.03)
    const datasheet = runJson<PlanResult>(['plan', '3090', '--on', 'h200', '--match', 'fp32', '--datasheet']).json
    expect(datasheet.basis).toBe('datasheet')
    expect(Math.abs(datasheet.expected.fp32Tflops - datasheet.target.fp32Tflops) / datasheet.target.fp32Tflops).toBeLessThanOrEqual(0.03)
  })

  it('on a non-MIG model plans the whole GPU', () => {
    const {exitCode, json} = runJson<PlanResult>(['plan', '3090', '--on', 'l40s'])
    expect(exitCode).toBe(0)
    expect(json.mig).toBeNull()
    expect(json.host.model).toBe('l40s')
  })

  it("on a non-MIG model, MPS shares out the GPU's own SMs and the text says how many it has", () => {
    const {exitCode, stdout} = runCli(['plan', 't4', '--on', 'l40s', '--match', 'fp32'])
    expect(exitCode).toBe(0)
    expect(stdout).toContain('slice:  whole GPU (142 SMs)')
    expect(stdout).toMatch(/MPS: +\d+% active threads = \d+ of 142 SMs/)
  })

  it('renders expected vs target with the error in % as text', () => {
    const {exitCode, stdout} = runCli(['plan', '3090', '--on', 'h200'])
    expect(exitCode).toBe(0)
    // DATASHEET, PEAK, ERROR, then MEASURED (the card), EXPECTED (this slice, measured), ERROR
    expect(stdout).toMatch(/FP32 TFLOPS\s+35\.6\s+[\d.]+\s+[-+][\d.]+%\s+24\.6\s+[\d.]+\s+[-+][\d.]+%/)
    expect(stdout).toContain('basis:  measured')
  })
})

describe.each([1, 8])('plan --host-gpu on a simulated %i-GPU H200', (gpus) => {
  const last = gpus - 1

  it('with MIG off: picks a slice and says MIG must be turned on; at most 3 nvidia-smi calls', () => {
    const sim = Sim.create('h200', gpus)
    const {exitCode, json} = runJson<PlanResult>(['plan', '3090', '--host-gpu', String(last)], sim.env())
    expect(exitCode).toBe(0)
    expect(json.host).toEqual({name: 'NVIDIA H200', index: last, model: 'h200_sxm', smCount: 132})
    expect(json.needsMigEnable).toBe(true)
    expect(json.mig?.profile).toBe('1g.35gb')
    expect(sim.calls().map((c) => c.argv.join(' '))).toEqual(['-q'])
  })

  it('with MIG on: reads free slots live; the choice follows them, then fails with MIG_NO_FREE_SLOT', () => {
    const sim = Sim.create('h200', gpus).enableMig(last)
    // on datasheets, where an L4 takes a 2g.35gb slice (what the slots are made to hold below)
    const plan = () => runJson<PlanResult>(['plan', 'l4', '--host-gpu', String(last), '--datasheet'], sim.env())

    const fresh = plan()
    expect(fresh.exitCode).toBe(0)
    expect(fresh.json.needsMigEnable).toBe(false)
    expect(fresh.json.mig?.profile).toBe('2g.35gb')
    expect(fresh.json.mig?.memoryGiB).toBe(32.25) // live -lgip figure, not the catalog's

    sim.createInstances(last, [14, 14, 14]) // someone holds every 2g.35gb slot
    const moved = plan()
    expect(moved.exitCode).toBe(0)
    expect(moved.json.mig?.profile).not.toBe('2g.35gb')
    expect(moved.json.mig?.memoryGiB).toBeGreaterThanOrEqual(24)

    sim.createInstances(last, [15]) // and the last slice that holds 24 GB
    const before = sim.stateText()
    const full = plan()
    expect(full.exitCode).toBe(3)
    expect(full.json).toMatchObject({error: {code: 'MIG_NO_FREE_SLOT', exit: 3}})
    expect(sim.stateText()).toBe(before)
  })

  it('uses the same nvidia-smi calls whatever the GPU count (-q, mig -lgip, mig -lgi)', () => {
    const sim = Sim.create('h200', gpus).enableMig(last)
    sim.clearCalls()
    expect(runJson(['plan', '3090', '--host-gpu', '0'], sim.env()).exitCode).toBe(0)
    const calls = sim.calls().map((c) => c.argv.join(' '))
    expect(calls.length).toBeLessThanOrEqual(3)
    // -q first; the two MIG tables are read at the same time, in either order
    expect([calls[0], ...calls.slice(1).sort()]).toEqual(['-q', 'mig -lgi', 'mig -lgip'])
  })
})

describe('plan --host-gpu on other simulated hosts', () => {
  it('L40S (no MIG): whole GPU with a clock and power cap', () => {
    const sim = Sim.create('l40s', 2)
    const {exitCode, json} = runJson<PlanResult>(['plan', '3090', '--host-gpu', '1'], sim.env())
    expect(exitCode).toBe(0)
    expect(json.mig).toBeNull()
    expect(json.needsMigEnable).toBe(false)
    expect(json.host).toMatchObject({index: 1, model: 'l40s'})
    expect(sim.calls()).toHaveLength(1)
  })

  it('a busy GPU with MIG off cannot turn MIG on: plan refuses as up does (plan predicts up)', () => {
    const sim = Sim.create('h200', 1).set('gpus.0.processes', [{pid: 42, name: 'python3', used_mib: 900}])
    const planned = runJson<{error: {code: string; exit: number}}>(['plan', '3090'], sim.env())
    const up = runJson<{error: {code: string; exit: number}}>(['up', '3090', '--no-container'], sim.env())
    expect(planned.json.error).toMatchObject({code: 'GPU_BUSY', exit: 3})
    expect(up.json.error).toEqual(planned.json.error)
    expect(planned.exitCode).toBe(3)
  })

  it('a refused mig -lgip does not read as "no free slot"', () => {
    const sim = Sim.create('h200', 1).enableMig(0).failNext({match: 'lgip', message: 'Insufficient Permissions', exit: 4})
    const {exitCode, json} = runJson<{error: {code: string; exit: number}}>(['plan', '3090'], sim.env())
    expect(json.error.code).not.toBe('MIG_NO_FREE_SLOT')
    expect(json.error).toMatchObject({code: 'MIG_PROFILES_UNREADABLE', exit: 4})
    expect(exitCode).toBe(4)
  })
})

describe('plan --count N (several devices in one session)', () => {
  it('--on h200: two 3090 slices on the one GPU, what joins them said in the text and in --json', () => {
    const {exitCode, json} = runJson<PlanResult>(['plan', '3090', '--on', 'h200', '--count', '2'])
    expect(exitCode).toBe(0)
    expect(json.ranks).toMatchObject({count: 2, gpus: [{index: null, ranks: 2}], link: {kind: 'mig-instances', acrossGpus: false}, shmMiB: 2048})
    const text = runCli(['plan', '3090', '--on', 'h200', '--count', '2'])
    expect(text.stdout).toContain('ranks:  2 devices, each as below: 2 on NVIDIA H200')
    expect(text.stdout).toMatch(/link: +The ranks are MIG instances: no NVLink or P2P/)
    // one is the plain plan
    expect(runJson<PlanResult>(['plan', '3090', '--on', 'h200', '--count', '1']).json.ranks).toBeUndefined()
  })

  it('more than fit is refused in one line (exit 3) with a fix, and changes nothing on a live GPU', () => {
    const refused = runJson(['plan', 't4', '--on', 'h200', '--count', '8'])
    expect(refused.exitCode).toBe(3)
    expect(refused.json).toMatchObject({error: {code: 'TOO_MANY_RANKS'}})
    expect(refused.json.error.message).toMatch(/^8 x Tesla T4 do not fit: 7 of 1g\.18gb/)
    expect(refused.json.error.fix[0]).toBe('ask for fewer: --count 7')

    const sim = Sim.create('h200', 1).enableMig(0)
    const before = sim.stateText()
    const live = runJson(['plan', 't4', '--count', '8'], sim.env())
    expect([live.exitCode, live.json.error?.code]).toEqual([3, 'TOO_MANY_RANKS'])
    expect(sim.stateText()).toBe(before)
  })

  it('on an 8-GPU box, without --host-gpu, 4 of a target one whole slice holds go one per GPU; --host-gpu keeps them on one', () => {
    const sim = Sim.create('h200', 8)
    const spread = runJson<PlanResult>(['plan', 'a100-80g', '--count', '4'], sim.env())
    expect(spread.exitCode).toBe(0)
    expect(spread.json.ranks!.gpus).toEqual([0, 1, 2, 3].map((index) => ({index, ranks: 1})))
    expect(spread.json.ranks!.link.acrossGpus).toBe(true)
    const one = runJson(['plan', 'a100-80g', '--count', '4', '--host-gpu', '5'], sim.env())
    expect([one.exitCode, one.json.error?.code]).toEqual([3, 'TOO_MANY_RANKS'])
  })

  it('--count with -o is refused (an export lays out single slices; use --mix)', () => {
    const r = runCli(['plan', '3090', '--on', 'h200', '--count', '2', '-o', 'slurm'])
    expect(r.exitCode).toBe(2)
  })
})
