/**
 * up --count N over several GPUs of a simulated 8x H200: the ranks go where `plan --count` places them, one session
 * (one name, listed once, ended whole) with a record on each GPU; all or nothing, and every crash point on any of its
 * GPUs recovers, the commit between the parts and the first record included.
 */
import {existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {killDuring} from '../support/crash-points.js'
import {mpsEnv, mpsLog} from '../support/mps-sim.js'
import {cleanupTemps, type Env, runCli, runJson, Sim} from '../support/run-cli.js'
import {gpuState, killHungSims, mutatingCalls, startCli, waitForCall} from '../support/run-cli-async.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

/** four A6000s: two 3g.71gb slices fit on an H200, so they take two GPUs */
const UP = ['up', 'a6000', '--count', '4', '--no-container', '--name', 'quad']

function eightGpus(): {sim: Sim; env: Env; before: unknown[]} {
  const sim = Sim.create('h200', 8)
  const env = mpsEnv(sim)
  return {sim, env, before: gpuState(sim)}
}

const bookOf = (env: Env, uuid: string) => join(env.GPU_COSPLAY_STATE_DIR!, 'gpus', `${uuid}.json`)
const claimOf = (env: Env, name: string) => join(env.GPU_COSPLAY_STATE_DIR!, 'sessions', `${name}.json`)

describe('up a6000 --count 4 on an 8x H200', () => {
  it('spreads as plan --count places it, lists the session once with every rank, and down restores every GPU', () => {
    const {sim, env, before} = eightGpus()
    const planned = runJson(['plan', 'a6000', '--count', '4'], env).json
    expect(planned.ranks.gpus).toEqual([
      {index: 0, ranks: 2},
      {index: 1, ranks: 2},
    ])
    expect(planned.ranks.link.acrossGpus).toBe(true)

    const up = runJson(UP, env)
    expect(up.exitCode).toBe(0)
    const r = up.json
    expect(r.plan.ranks.gpus).toEqual(planned.ranks.gpus)
    expect(r.ranks.map((k: any) => k.gpuIndex)).toEqual([0, 0, 1, 1])
    const uuids = r.ranks.map((k: any) => k.uuid)
    expect(new Set(uuids).size).toBe(4)
    for (const u of uuids) expect(u).toMatch(/^MIG-/)
    expect(r.env.CUDA_VISIBLE_DEVICES).toBe(uuids.join(','))
    // the slices are where the ranks say: two 3g instances on each of GPUs 0 and 1, nothing elsewhere
    // every GPU was read under its lock; only the two it uses got a book
    expect(readdirSync(join(env.GPU_COSPLAY_STATE_DIR!, 'gpus')).filter((f) => f.endsWith('.json'))).toHaveLength(2)
    const during = gpuState(sim) as {instances: unknown[]}[]
    expect(during.map((g) => g.instances.length)).toEqual([2, 2, 0, 0, 0, 0, 0, 0])
    expect(during.slice(2)).toEqual(before.slice(2))
    // a daemon per rank on its own device, with the plan's limits
    const daemons = mpsLog(sim).filter((c) => c.command === '-d')
    expect(daemons.map((d) => d.cudaVisibleDevices).sort()).toEqual([...uuids].sort())
    expect(new Set(r.ranks.map((k: any) => k.mpsPipe)).size).toBe(4)

    const ps = runJson(['ps'], env).json
    expect(ps.map((s: any) => s.name)).toEqual(['quad'])
    expect(ps[0].ranks.map((k: any) => [k.uuid, k.gpuIndex])).toEqual(uuids.map((u: string, i: number) => [u, i < 2 ? 0 : 1]))
    // status (and metrics, which serve what status reads) list it once, and draw each GPU's slices as the session's
    const status = runJson(['status'], env).json
    expect(status.sessions.map((s: any) => s.name)).toEqual(['quad'])
    const owners = status.gpus.slice(0, 2).flatMap((g: any) => g.instances.map((i: any) => i.owner))
    expect(owners).toEqual(['quad', 'quad', 'quad', 'quad'])

    expect(runCli(['ps'], env).stdout).toMatch(/quad .* 4 x 3g\.71gb GI 0:\d+,0:\d+,1:\d+,1:\d+ /)

    const down = runJson(['down', 'quad'], env)
    expect(down.exitCode).toBe(0)
    expect(down.json.closed ?? down.json).toHaveLength(1)
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(['ps'], env).json).toEqual([])
    expect(mpsLog(sim).filter((c) => c.command === 'quit')).toHaveLength(4)
  })

  it('ps counts the memory its ranks use on every GPU, and calls it crashed when an instance on any of them is gone', () => {
    const {sim, env} = eightGpus()
    const up = runJson(UP, env).json
    const onGpu1 = up.ranks.filter((k: any) => k.gpuIndex === 1)
    const gis = sim.state().gpus[1].gis
    const giOf = (uuid: string) => gis.find((g: any) => g.cis.some((c: any) => c.uuid === uuid))?.id
    sim.setAll({
      'gpus.0.processes': [{pid: 4242, name: 'python3', used_mib: 900, type: 'C', gi: up.ranks[0].gpuInstanceId, ci: 0}],
      'gpus.1.processes': [{pid: 4343, name: 'python3', used_mib: 700, type: 'C', gi: giOf(onGpu1[1].uuid), ci: 0}],
    })
    const seen = runJson(['ps'], env).json[0]
    expect([seen.memoryUsedMiB, seen.crashed]).toEqual([1600, false])
    // an administrator destroys rank 3's instance on GPU 1
    sim.setAll({'gpus.1.processes': [], 'gpus.1.gis': gis.filter((g: any) => g.id !== giOf(onGpu1[1].uuid))})
    expect(runJson(['ps'], env).json[0].crashed).toBe(true)
    sim.set('gpus.0.processes', [])
    expect(runCli(['down', 'quad'], env).exitCode).toBe(0)
  })

  it('says in text which GPU each rank is on', () => {
    const {env} = eightGpus()
    const text = runCli(UP, env).stdout
    expect(text).toContain('Session quad: NVIDIA RTX A6000 on GPUs 0, 1')
    expect(text).toMatch(/cuda:3 +MIG-\S+ \(GI \d+, CI \d+\) on GPU 1/)
    expect(runCli(['down', 'quad'], env).exitCode).toBe(0)
  })

  it('--host-gpu keeps the ranks on that GPU: four that never fit there are refused before anything changes', () => {
    const {sim, env, before} = eightGpus()
    sim.clearCalls()
    const r = runJson([...UP, '--host-gpu', '3'], env)
    expect([r.exitCode, r.json.error.code]).toEqual([3, 'TOO_MANY_RANKS'])
    expect(mutatingCalls(sim)).toEqual([])
    expect(gpuState(sim)).toEqual(before)
  })

  it('places around what others hold: GPU 0 full, the ranks go to the GPUs with room', () => {
    const {sim, env, before} = eightGpus()
    expect(runJson(['up', 'a100-80g', '--no-container', '--name', 'whole', '--host-gpu', '0'], env).exitCode).toBe(0)
    const r = runJson(UP, env)
    expect(r.exitCode).toBe(0)
    expect(r.json.plan.ranks.gpus).toEqual([
      {index: 1, ranks: 2},
      {index: 2, ranks: 2},
    ])
    expect(runCli(['down', 'quad', 'whole'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  })

  it('goes around the GPUs it cannot use now (a model it does not know, a damaged journal, a failing read), and leaves them as they were', () => {
    const {sim, env} = eightGpus()
    const uuids: string[] = sim.state().gpus.map((g: {uuid: string}) => g.uuid)
    sim.set('gpus.0.name', 'NVIDIA Quux 9000')
    mkdirSync(join(env.GPU_COSPLAY_STATE_DIR!, 'gpus'), {recursive: true})
    writeFileSync(bookOf(env, uuids[1]), '{"damaged')
    const before = gpuState(sim)
    sim.failNext({match: uuids[2]})
    const up = runJson(UP, env)
    expect([up.exitCode, up.stderr]).toEqual([0, ''])
    expect(up.json.plan.ranks.gpus).toEqual([
      {index: 3, ranks: 2},
      {index: 4, ranks: 2},
    ])
    expect(up.json.notes).toEqual(
      expect.arrayContaining([expect.stringMatching(/^left GPU 1 out: .*damaged|corrupt/i), expect.stringMatching(/^left GPU 2 out: /)]),
    )
    // down ends it beside the damaged journal; a name found nowhere else may be on that GPU, and down says so
    expect(runCli(['down', 'quad'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(['down', 'quad'], env).json.error.code).toBe('JOURNAL_CORRUPT')
    expect(readFileSync(bookOf(env, uuids[1]), 'utf8')).toBe('{"damaged')
  })

  it('refuses in one line naming each GPU it could not use, where the others cannot take the ranks', () => {
    const {sim, env} = eightGpus()
    sim.setAll(Object.fromEntries([2, 3, 4, 5, 6, 7].map((i) => [`gpus.${i}.name`, 'NVIDIA Quux 9000'])))
    expect(runJson(['up', 'a6000', '--count', '2', '--no-container', '--host-gpu', '1'], env).exitCode).toBe(0)
    const before = gpuState(sim)
    sim.clearCalls()
    const r = runJson(UP, env)
    expect(r.exitCode).not.toBe(0)
    expect(r.json.error.code).toBe('RANKS_DO_NOT_FIT')
    expect(r.json.error.message).toMatch(/GPU 7: .*Quux/)
    expect(mutatingCalls(sim)).toEqual([])
    expect(gpuState(sim)).toEqual(before)
  })

  it('lets go of the GPUs it does not go to once it has planned: a plain up on one of them does not wait for it', async () => {
    const {sim, env, before} = eightGpus()
    sim.set('faults', [{at: 1, action: 'hang', match: '-cgi'}])
    const spread = startCli(UP, env)
    await waitForCall(sim, (c) => c.fault === 'hang')
    // its name is claimed before it is placed: the claim names no GPU
    expect(JSON.parse(readFileSync(claimOf(env, 'quad'), 'utf8')).gpuUuid).toBeNull()
    // the spread up holds GPUs 0 and 1 while its first instance is being made; GPU 5 is free to take
    const solo = runJson(['up', 'a6000', '--no-container', '--name', 'solo', '--host-gpu', '5'], env)
    spread.kill('SIGKILL')
    await spread.done
    killHungSims(sim)
    sim.set('faults', [])
    expect([solo.exitCode, solo.stderr]).toEqual([0, ''])
    expect(runJson(['recover'], env).exitCode).toBe(0)
    expect(runCli(['down', 'solo'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  })

  it('spread ups racing each other and a plain up on the same GPUs: none waits on another in a circle, each gets distinct slices, down restores all', async () => {
    const {sim, env, before} = eightGpus()
    const runs = [
      startCli([...UP.slice(0, -1), 'quad1', '--json'], env),
      startCli([...UP.slice(0, -1), 'quad2', '--json'], env),
      startCli(['up', 'a6000', '--no-container', '--name', 'solo', '--host-gpu', '7', '--json'], env),
    ]
    const results = await Promise.all(runs.map((r) => r.done))
    expect(results.map((r) => [r.exitCode, r.stderr])).toEqual(results.map(() => [0, '']))
    const ranks = results.slice(0, 2).flatMap((r) => JSON.parse(r.stdout).ranks.map((k: any) => k.uuid))
    expect(new Set(ranks).size).toBe(8)
    // 4 + 4 + 1 slices of 3g.71gb, two a GPU (a spread up locks all eight GPUs to plan, then only its own; the plain one GPU 7's)
    expect((gpuState(sim) as {instances: unknown[]}[]).reduce((n, g) => n + g.instances.length, 0)).toBe(9)
    expect(runCli(['down', 'quad1', 'quad2', 'solo'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  })

  it('a killed up whose parts became active before the first record did is rolled back whole by the next command', () => {
    const {sim, env, before} = eightGpus()
    expect(runJson(UP, env).exitCode).toBe(0)
    // the book as a kill -9 between the parts' commit and the first record's leaves it: the first record still starting,
    // its process gone
    const first = runJson(['ps'], env).json[0].gpuUuid
    const file = bookOf(env, first)
    const book = JSON.parse(readFileSync(file, 'utf8'))
    Object.assign(book.sessions.quad, {phase: 'starting', pid: 2 ** 22 + 17})
    writeFileSync(file, JSON.stringify(book))
    const recovered = runJson(['recover'], env)
    expect(recovered.exitCode).toBe(0)
    expect(recovered.json.gpus.flatMap((g: any) => g.recovered)).toEqual(['quad', 'quad'])
    expect(gpuState(sim)).toEqual(before)
    expect(mpsLog(sim).filter((c) => c.command === 'quit')).toHaveLength(4)
    expect(runJson(['ps'], env).json).toEqual([])
  })

  it('a part that no first record claims (its session ended, the name taken again) is rolled back by the next command', () => {
    const {sim, env, before} = eightGpus()
    const up = runJson(UP, env).json
    const file = bookOf(env, up.hostGpu.uuid)
    const book = JSON.parse(readFileSync(file, 'utf8'))
    book.sessions.quad.createdAt = new Date(Date.parse(book.sessions.quad.createdAt) + 1).toISOString()
    writeFileSync(file, JSON.stringify(book))
    const recovered = runJson(['recover'], env)
    expect(recovered.json.gpus.map((g: any) => g.recovered)).toEqual(expect.arrayContaining([['quad'], []]))
    expect(recovered.json.gpus.flatMap((g: any) => g.recovered)).toEqual(['quad'])
    expect((gpuState(sim) as {instances: unknown[]}[]).map((g) => g.instances.length)).toEqual([2, 0, 0, 0, 0, 0, 0, 0])
    expect(runCli(['down', 'quad'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  })

  it("kill -9 while down ends the second GPU's part: recover finishes it", async () => {
    const {sim, env, before} = eightGpus()
    expect(runJson(UP, env).exitCode).toBe(0)
    await killDuring(sim, env, ['down', 'quad'], ['mig', '-i', '1', '-gi', '1', '-ci', '0', '-dci'], 'hang')
    // its first record is ended, its part is not: the name stays claimed, nobody else's up takes it meanwhile
    expect(existsSync(claimOf(env, 'quad'))).toBe(true)
    expect(runJson(['up', 't4', '--no-container', '--name', 'quad', '--host-gpu', '5'], env).json.error.code).toBe('SESSION_EXISTS')
    expect(runJson(['recover'], env).exitCode).toBe(0)
    expect(existsSync(claimOf(env, 'quad'))).toBe(false)
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(['ps'], env).json).toEqual([])
  })
})

describe('a session name held by records on several GPUs', () => {
  it('reset of one GPU keeps the name while another GPU still holds a record of it', () => {
    const {sim, env, before} = eightGpus()
    expect(runJson(UP, env).exitCode).toBe(0)
    expect(runJson(['reset', '--host-gpu', '1', '--yes'], env).exitCode).toBe(0)
    expect(existsSync(claimOf(env, 'quad'))).toBe(true)
    expect(runJson(['up', 't4', '--no-container', '--name', 'quad', '--host-gpu', '5'], env).json.error.code).toBe('SESSION_EXISTS')
    expect(runJson(['down', 'quad'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
    expect(existsSync(claimOf(env, 'quad'))).toBe(false)
  })

  it('an up never writes over a record of the same name, even when its claim is gone', () => {
    const {sim, env} = eightGpus()
    expect(runJson(['up', 't4', '--no-container', '--name', 'solo', '--host-gpu', '0'], env).exitCode).toBe(0)
    const during = gpuState(sim)
    // the claim lost (removed by hand, or released too early by an older gpu-cosplay) while GPU 0 still holds solo
    rmSync(claimOf(env, 'solo'))
    sim.clearCalls()
    const again = runJson(['up', 't4', '--no-container', '--name', 'solo', '--host-gpu', '0'], env)
    expect([again.exitCode, again.json.error.code]).toEqual([2, 'SESSION_EXISTS'])
    expect(mutatingCalls(sim)).toEqual([])
    expect(gpuState(sim)).toEqual(during)
    expect(runJson(['ps'], env).json.map((s: any) => s.name)).toEqual(['solo'])
  })
})

describe('a spread session beside failures and busy GPUs', () => {
  /** an up of quad that failed on GPU 1's second instance, and whose undo of one of GPU 0's failed too */
  function upLeftHalfUndone(): ReturnType<typeof eightGpus> {
    const scene = eightGpus()
    scene.sim.set('faults', [
      {at: 4, action: 'fail', match: '-cgi'},
      {at: 1, action: 'fail', match: '-dci'},
    ])
    expect(runJson(UP, scene.env).exitCode).toBe(3)
    scene.sim.set('faults', [])
    return scene
  }

  it('an up whose undo failed keeps its name claimed while its records remain, and recover puts every GPU back', () => {
    const {sim, env, before} = upLeftHalfUndone()
    expect(existsSync(claimOf(env, 'quad'))).toBe(true)
    expect(runJson(['up', 't4', '--no-container', '--name', 'quad', '--host-gpu', '5'], env).json.error.code).toBe('SESSION_EXISTS')
    // recover finishes the undo, in order (MIG mode goes off once the instance left over is gone), and frees the name
    expect(runJson(['recover'], env).exitCode).toBe(0)
    expect(existsSync(claimOf(env, 'quad'))).toBe(false)
    expect(gpuState(sim)).toEqual(before)
  })

  it('the next command that opens the left-over record’s book rolls it back and frees the name, without recover', () => {
    const {sim, env, before} = upLeftHalfUndone()
    // a teammate's spread up opens every GPU's book
    expect(runJson([...UP.slice(0, -1), 'other'], env).exitCode).toBe(0)
    expect(existsSync(claimOf(env, 'quad'))).toBe(false)
    expect(runJson(['up', 't4', '--no-container', '--name', 'quad', '--host-gpu', '5'], env).exitCode).toBe(0)
    expect(runCli(['down', 'quad', 'other'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  })

  it('down leaves a spread session whole, and its name claimed, while one of its books is damaged; down --all ends nothing', () => {
    const {sim, env} = eightGpus()
    const uuids: string[] = sim.state().gpus.map((g: {uuid: string}) => g.uuid)
    expect(runJson(UP, env).exitCode).toBe(0)
    expect(runJson(['up', 't4', '--no-container', '--name', 'solo', '--host-gpu', '5'], env).exitCode).toBe(0)
    const during = gpuState(sim)
    const quad = runJson(['ps'], env).json.find((s: any) => s.name === 'quad')
    const partGpu = quad.ranks.map((k: any) => k.gpuIndex).find((i: number) => uuids[i] !== quad.gpuUuid)
    // its first record's book, then its part's
    for (const damaged of [quad.gpuUuid, uuids[partGpu]]) {
      const text = readFileSync(bookOf(env, damaged), 'utf8')
      writeFileSync(bookOf(env, damaged), '{"damaged')
      for (const args of [
        ['down', 'quad'],
        ['down', '--all'],
      ])
        expect([args, runJson(args, env).json.error?.code]).toEqual([args, 'JOURNAL_CORRUPT'])
      expect(gpuState(sim)).toEqual(during)
      expect(existsSync(claimOf(env, 'quad'))).toBe(true)
      writeFileSync(bookOf(env, damaged), text)
    }
    expect(runCli(['down', 'quad', 'solo'], env).exitCode).toBe(0)
  })

  it('kill -9 while down ends the first record: one recover finishes the whole session, whichever book it opens first', async () => {
    let sim = Sim.create('h200', 8)
    // the part's book (GPU 1) sorts before the first record's (GPU 0)
    while (!(sim.state().gpus[1].uuid < sim.state().gpus[0].uuid)) sim = Sim.create('h200', 8)
    const env = mpsEnv(sim)
    const before = gpuState(sim)
    expect(runJson(UP, env).exitCode).toBe(0)
    await killDuring(sim, env, ['down', 'quad'], ['mig -i 0 -gi'], 'hang')
    expect(runJson(['recover'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
    expect(existsSync(claimOf(env, 'quad'))).toBe(false)
  })

  it('goes around a GPU another command holds for long, instead of waiting on it with the others held', async () => {
    const {sim, env, before} = eightGpus()
    const uuids: string[] = sim.state().gpus.map((g: {uuid: string}) => g.uuid)
    const last = uuids.indexOf([...uuids].sort().at(-1)!)
    // a plain up on the GPU every spread up locks last hangs while it holds that GPU
    sim.set('faults', [{at: 1, action: 'hang', match: '-cgi'}])
    const stuck = startCli(['up', 't4', '--no-container', '--name', 'stuck', '--host-gpu', String(last)], env)
    await waitForCall(sim, (c) => c.fault === 'hang')
    const quad = runJson(UP, env)
    stuck.kill('SIGKILL')
    await stuck.done
    killHungSims(sim)
    sim.set('faults', [])
    expect([quad.exitCode, quad.stderr]).toEqual([0, ''])
    expect(quad.json.plan.ranks.gpus.map((g: any) => g.index)).not.toContain(last)
    expect(quad.json.notes).toEqual(expect.arrayContaining([expect.stringMatching(new RegExp(`^left GPU ${last} out: .*busy`))]))
    expect(runJson(['recover'], env).exitCode).toBe(0)
    expect(runCli(['down', 'quad'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  })

  it('Ctrl-C while it waits for a GPU another command holds: it stops at once, having changed nothing', async () => {
    const {sim, env} = eightGpus()
    sim.set('faults', [{at: 1, action: 'hang', match: '-cgi'}])
    const stuck = startCli(['up', 't4', '--no-container', '--name', 'stuck', '--host-gpu', '0'], env)
    await waitForCall(sim, (c) => c.fault === 'hang')
    const during = gpuState(sim)
    const waiting = startCli(['up', 't4', '--no-container', '--name', 'waiting', '--host-gpu', '0', '--json'], env)
    await new Promise((resolve) => setTimeout(resolve, 1500))
    const asked = Date.now()
    waiting.kill('SIGINT')
    const result = await waiting.done
    const tookMs = Date.now() - asked
    stuck.kill('SIGKILL')
    await stuck.done
    killHungSims(sim)
    sim.set('faults', [])
    expect(JSON.parse(result.stdout).error.code).toBe('INTERRUPTED')
    // not the 120 s a lock is waited for
    expect(tookMs).toBeLessThan(15_000)
    expect(gpuState(sim)).toEqual(during)
    expect(existsSync(claimOf(env, 'waiting'))).toBe(false)
    expect(runJson(['recover'], env).exitCode).toBe(0)
  })

  it('status draws its slices as its own on every GPU it holds', () => {
    const {env} = eightGpus()
    expect(runJson(UP, env).exitCode).toBe(0)
    const text = runCli(['status'], env).stdout
    expect(text).toMatch(/GPU 1: /)
    expect(text).not.toMatch(/\? GI/)
    expect(runCli(['down', 'quad'], env).exitCode).toBe(0)
  })
})

describe('kill -9 during a spread up --count 4, then recover', () => {
  const {sim, env} = eightGpus()
  sim.clearCalls()
  const clean = runCli(UP, env)
  if (clean.exitCode !== 0) throw new Error(`clean run failed (exit ${clean.exitCode}): ${clean.stderr}`)
  const points = mutatingCalls(sim)
  runCli(['down', 'quad'], env)
  const cases = points.flatMap((call, i) => {
    const nth = points.slice(0, i + 1).filter((c) => c.join(' ') === call.join(' ')).length
    return (['hang', 'hang-after'] as const).map((action) => [`${call.join(' ')} #${nth}`, action, call, nth] as const)
  })

  it('has crash points on both GPUs', () => {
    const gpus = new Set(points.map((c) => c[c.indexOf('-i') + 1]))
    expect(gpus).toEqual(new Set(['0', '1']))
    expect(points.filter((c) => c.includes('-cgi'))).toHaveLength(4)
  })

  it.each(cases)(
    'killed in "%s" (%s): recover rolls the whole session back on every GPU',
    async (_label, action, call, nth) => {
      const host = eightGpus()
      await killDuring(host.sim, host.env, UP, call, action, nth)
      const recovered = runJson(['recover'], host.env)
      expect(recovered.exitCode).toBe(0)
      expect(recovered.json.gpus.flatMap((g: any) => g.recovered).every((n: string) => n === 'quad')).toBe(true)
      expect(gpuState(host.sim)).toEqual(host.before)
      expect(runJson(['ps'], host.env).json).toEqual([])
      const started = mpsLog(host.sim).filter((c) => c.command === '-d').length
      expect(mpsLog(host.sim).filter((c) => c.command === 'quit').length).toBe(started)
      expect(runCli(UP, host.env).exitCode).toBe(0)
      expect(runCli(['down', 'quad'], host.env).exitCode).toBe(0)
      expect(gpuState(host.sim)).toEqual(host.before)
    },
    60_000,
  )
})
