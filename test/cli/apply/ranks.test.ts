/**
 * up --count N on a simulated H200: one session, N slices each with its own MPS daemon on its own device, listed
 * once, ended whole; N that do not fit are refused before anything changes; every crash point of the N-slice up
 * recovers (quotas: test/unit/apply/quota-idle.test.ts).
 */
import {existsSync} from 'node:fs'

import {freshHost, killDuring} from '../support/crash-points.js'
import {mpsEnv, mpsLog} from '../support/mps-sim.js'
import {cleanupTemps, runCli, runJson} from '../support/run-cli.js'
import {gpuState, mutatingCalls} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

const UP = ['up', '3090', '--count', '2', '--no-container', '--name', 'duo']

describe('up 3090 --count 2 on an H200', () => {
  it('makes two slices, a daemon on each with its limits, lists the session once, and down restores the GPU exactly', () => {
    const sim = freshHost()
    const env = mpsEnv(sim)
    const before = gpuState(sim)
    const up = runJson(UP, env)
    expect(up.exitCode).toBe(0)
    const r = up.json
    expect(r.plan.ranks).toMatchObject({count: 2, gpus: [{index: 0, ranks: 2}]})
    expect(r.ranks).toHaveLength(2)
    const uuids = r.ranks.map((k: any) => k.uuid)
    expect(new Set(uuids).size).toBe(2)
    for (const u of uuids) expect(u).toMatch(/^MIG-/)
    expect(r.ranks.map((k: any) => k.gpuInstanceId)).toEqual([expect.any(Number), expect.any(Number)])
    // the slices are live MIG devices of the profile the plan chose
    const live = JSON.parse(sim.smi(['--sim-dump']))
    const instances = live.gpus[0].gpu_instances ?? live.gpus[0].gis ?? []
    expect(instances.length === 0 || instances.length === 2).toBe(true)
    // a daemon per rank: its own pipe, its own device, the plan's limits
    const daemons = mpsLog(sim).filter((c) => c.command === '-d')
    expect(daemons.map((d) => d.cudaVisibleDevices).sort()).toEqual([...uuids].sort())
    expect(new Set(daemons.map((d) => d.pipeDirectory)).size).toBe(2)
    for (const k of r.ranks) {
      expect(k.mpsPipe).toEqual(expect.any(String))
      const limits = mpsLog(sim).filter((c) => c.pipeDirectory === k.mpsPipe && c.command?.startsWith('set_default'))
      expect(limits.map((c) => c.command)).toEqual([
        `set_default_active_thread_percentage ${r.plan.mps.activeThreadPercentage}`,
        `set_default_device_pinned_mem_limit 0 ${r.plan.mps.pinnedMemLimitMiB}M`,
      ])
    }
    // what a process needs to find its own device
    expect(JSON.parse(r.env.GPU_COSPLAY_RANKS)).toEqual(r.ranks.map((k: any) => ({uuid: k.uuid, mpsPipe: k.mpsPipe})))
    expect(r.env.CUDA_VISIBLE_DEVICES).toBe(uuids.join(','))
    // one session, listed once, with both slices
    const ps = runJson(['ps'], env).json
    expect(ps.map((s: any) => s.name)).toEqual(['duo'])
    expect(ps[0].ranks.map((k: any) => k.uuid)).toEqual(uuids)
    expect(runCli(['ps'], env).stdout).toMatch(/duo .* 2 x 1g\.35gb GI \d+,\d+ /)
    const text = runCli(['up', '3090', '--count', '2', '--no-container', '--name', 'duo2'], env)
    expect(text.stdout).toContain('ranks:  2 devices')
    expect(text.stdout).toMatch(/cuda:1 +MIG-/)
    expect(runCli(['down', 'duo2'], env).exitCode).toBe(0)

    expect(runCli(['down', 'duo'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
    expect(mpsLog(sim).filter((c) => c.command === 'quit')).toHaveLength(4)
    for (const k of r.ranks) expect(existsSync(k.mpsPipe)).toBe(false)
  })

  it('8 x T4 where 7 fit is refused before anything changes', () => {
    const sim = freshHost()
    const env = mpsEnv(sim)
    const before = sim.stateText()
    sim.clearCalls()
    const r = runJson(['up', 't4', '--count', '8', '--no-container'], env)
    expect([r.exitCode, r.json.error.code]).toEqual([3, 'TOO_MANY_RANKS'])
    expect(r.json.error.message).toMatch(/^8 x Tesla T4 do not fit: 7 of 1g\.18gb/)
    expect(mutatingCalls(sim)).toEqual([])
    expect(sim.stateText()).toBe(before)
    expect(mpsLog(sim)).toEqual([])
    expect(runJson(['ps'], env).json).toEqual([])
    // and 7 do
    expect(runJson(['up', 't4', '--count', '7', '--no-container', '--name', 'seven'], env).exitCode).toBe(0)
    expect(runCli(['down', 'seven'], env).exitCode).toBe(0)
  })
})

describe('kill -9 during up --count 2, then recover', () => {
  const sim = freshHost()
  const env = mpsEnv(sim)
  sim.clearCalls()
  if (runCli(UP, env).exitCode !== 0) throw new Error('clean run failed')
  const points = mutatingCalls(sim)
  runCli(['down', 'duo'], env)
  // the n-th call of the same argv (both ranks' -cgi look alike): the fault is armed at its occurrence
  const cases = points.flatMap((call, i) => {
    const nth = points.slice(0, i + 1).filter((c) => c.join(' ') === call.join(' ')).length
    return (['hang', 'hang-after'] as const).map((action) => [`${call.join(' ')} #${nth}`, action, call, nth] as const)
  })

  it("has both ranks' instances among its crash points", () => {
    expect(points.filter((c) => c.includes('-cgi'))).toHaveLength(2)
  })

  it.each(cases)(
    'killed in "%s" (%s): recover rolls the whole session back, daemons included',
    async (_label, action, call, nth) => {
      const host = freshHost()
      const hostEnv = mpsEnv(host)
      const before = gpuState(host)
      await killDuring(host, hostEnv, UP, call, action, nth)
      const recovered = runJson(['recover'], hostEnv)
      expect(recovered.exitCode).toBe(0)
      expect(recovered.json.gpus[0].recovered).toEqual(['duo'])
      expect(gpuState(host)).toEqual(before)
      expect(runJson(['ps'], hostEnv).json).toEqual([])
      const started = mpsLog(host).filter((c) => c.command === '-d').length
      expect(mpsLog(host).filter((c) => c.command === 'quit').length).toBe(started)
      expect(runCli(UP, hostEnv).exitCode).toBe(0)
      expect(runCli(['down', 'duo'], hostEnv).exitCode).toBe(0)
    },
    30_000,
  )
})
