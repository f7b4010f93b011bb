/**
 * On an 8-GPU box, a session on GPU 1 changes GPU 1 and nothing else. `-q -i <UUID>` prints one GPU block whose
 * position says nothing of the index: every change and MIG read after it must still name GPU 1 (an earlier
 * version took the block's position, 0, and changed GPU 0 instead).
 */
import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {killDuring} from '../support/crash-points.js'
import {cleanupTemps, runCli, runJson, Sim} from '../support/run-cli.js'
import {gpuState, MUTATING} from '../support/run-cli-async.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

/** the GPU index each call names with -i, for the calls that change something */
const changedGpus = (sim: Sim) =>
  sim
    .calls()
    .filter((c) => MUTATING.test(c.argv.join(' ')))
    .map((c) => c.argv[c.argv.indexOf('-i') + 1])

describe('sessions on GPU 1 of an 8x H200', () => {
  it('up twice (the second beside the first, MIG on), ps and down: only GPU 1 changes, then is restored', () => {
    const sim = Sim.create('h200', 8)
    const env = sim.env()
    const before = gpuState(sim)
    for (const name of ['one', 'two']) expect(runJson(['up', 't4', '--no-container', '--host-gpu', '1', '--name', name], env).exitCode).toBe(0)

    const during = gpuState(sim) as {instances: unknown[]}[]
    expect(during.map((g, i) => (i === 1 ? 'changed' : g))).toEqual(before.map((g, i) => (i === 1 ? 'changed' : g)))
    expect(during[1].instances).toHaveLength(2)
    expect(new Set(changedGpus(sim))).toEqual(new Set(['1']))

    const ps = runJson(['ps'], env)
    expect(ps.json.map((s: any) => [s.name, s.gpuIndex, s.phase, s.crashed, s.instanceMissing])).toEqual([
      ['one', 1, 'active', false, false],
      ['two', 1, 'active', false, false],
    ])

    sim.clearCalls()
    expect(runCli(['down', 'one', 'two'], env).exitCode).toBe(0)
    expect(new Set(changedGpus(sim))).toEqual(new Set(['1']))
    // down knows the index from the book this boot wrote: no -L
    expect(sim.calls().filter((c) => c.argv[0] === '-L')).toEqual([])
    expect(gpuState(sim)).toEqual(before)
  })

  it('kill -9 while up creates the slice on GPU 1, then recover: GPU 1 restored, the others untouched', async () => {
    const sim = Sim.create('h200', 8)
    const env = sim.env()
    const before = gpuState(sim)
    await killDuring(sim, env, ['up', 't4', '--no-container', '--host-gpu', '1', '--name', 'killed'], ['mig', '-i', '1', '-cgi'], 'hang-after')
    expect((gpuState(sim) as {instances: unknown[]}[])[1].instances).toHaveLength(1)
    sim.clearCalls()
    const recovered = runJson(['recover'], env)
    expect(recovered.exitCode).toBe(0)
    expect(new Set(changedGpus(sim))).toEqual(new Set(['1']))
    expect(gpuState(sim)).toEqual(before)
  })
})
