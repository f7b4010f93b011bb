/**
 * `up` makes its slice with one `mig -cgi P -C` (the GPU instance and its default compute instance): on a driver
 * that does not print the compute instance's ID, and for a session journaled by an older gpu-cosplay (separate
 * create-gi and create-ci steps), `down` still removes exactly what the session made.
 */
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {cleanupTemps, editBook, ROOT, runCli, runJson, Sim} from '../support/run-cli.js'
import {gpuState} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

const cisOf = (sim: Sim) => sim.state().gpus[0].gis.flatMap((gi: any) => gi.cis.map((ci: any) => ({gi: gi.id, ci: ci.id})))

describe('the slice and its compute instance in one call', () => {
  it('an old driver that prints no compute-instance ID: up finds it, down removes it', () => {
    const sim = Sim.create('h200', 1).set('ci_id_in_output', false)
    const env = sim.env()
    const before = gpuState(sim)
    const up = runJson(['up', 't4', '--no-container', '--name', 'old-driver'], env)
    expect(up.exitCode).toBe(0)
    expect(cisOf(sim)).toEqual([{gi: up.json.mig.gpuInstanceId, ci: up.json.mig.computeInstanceId}])
    expect(up.json.mig.computeInstanceId).toEqual(expect.any(Number))
    expect(runCli(['down', 'old-driver'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  }, 30_000)

  it('a session an older gpu-cosplay journaled as create-gi then create-ci is undone by down', () => {
    const sim = Sim.create('h200', 1).enableMig(0)
    const env = sim.env()
    const before = gpuState(sim)
    const up = runJson(['up', 't4', '--no-container', '--name', 'older'], env)
    expect(up.exitCode).toBe(0)
    editBook(env, (book) => {
      const journal = book.sessions.older.journal
      const at = journal.findIndex((e: any) => e.kind === 'create-gi')
      const gi = journal[at]
      // as the older version wrote it: -cgi alone, then -cci in the new GPU instance
      const {computeInstanceId} = gi.result
      delete gi.params.withComputeInstance
      gi.result = {gpuInstanceId: gi.result.gpuInstanceId}
      journal.splice(at + 1, 0, {
        kind: 'create-ci',
        state: 'done',
        params: {},
        prior: {gpuInstanceId: gi.result.gpuInstanceId, computeInstanceIds: []},
        result: {computeInstanceId},
      })
    })
    sim.clearCalls()
    expect(runCli(['down', 'older'], env).exitCode).toBe(0)
    expect(
      sim
        .calls()
        .map((c) => c.argv.find((a) => a === '-dci' || a === '-dgi'))
        .filter(Boolean),
    ).toEqual(['-dci', '-dgi'])
    expect(gpuState(sim)).toEqual(before)
  }, 30_000)
})

describe('a session left up across an upgrade', () => {
  // the plan as gpu-cosplay stored it before MPS shaping (test/fixtures/books/README.md)
  const oldBook = JSON.parse(readFileSync(join(ROOT, 'test/fixtures/books/before-mps-shaping.json'), 'utf8'))

  it('is listed, shown and ended: its stored plan is read as what it was', () => {
    const sim = Sim.create('h200', 1)
    const env = sim.env()
    const before = gpuState(sim)
    expect(runJson(['up', 't4', '--no-container', '--name', 'older'], env).exitCode).toBe(0)
    editBook(env, (book) => {
      book.sessions.older.plan = oldBook.sessions.old1.plan
    })
    const ps = runJson(['ps'], env)
    expect(ps.exitCode).toBe(0)
    expect(ps.json.map((s: any) => [s.name, s.phase])).toEqual([['older', 'active']])
    expect(runJson(['status'], env).exitCode).toBe(0)
    expect(runCli(['down', 'older'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  }, 30_000)
})
