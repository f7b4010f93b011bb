/**
 * A change nvidia-smi refuses outright never happened: `up` undoes what came before it and leaves no trace of the
 * session (book, name claim, journal), so neither `ps` nor `recover` has anything to show. A change whose outcome is
 * unknown is still undone, and what could not be undone is left to `recover`, which the error then says.
 */
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {cleanupTemps, type Env, runCli, runJson, Sim} from '../support/run-cli.js'
import {gpuState, mutatingCalls} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

// t4 on an H200 with MIG off takes every change: persistence, MIG mode, the instance, the clock lock, the power limit.
const UP = ['up', 't4', '--no-container', '--name', 'refused']

/** A host whose persistence mode is off, so that `-pm 1` is a change, and a user nvidia-smi treats as not root. */
function host(requireRoot: boolean | string[]): {sim: Sim; env: Env; before: unknown[]} {
  const sim = Sim.create('h200', 1).setAll({'gpus.0.persistence': false, 'gpus.0.power_limit': 650, require_root: requireRoot})
  return {sim, env: sim.env({GPU_COSPLAY_SIM_EUID: '1000'}), before: gpuState(sim)}
}

/** Every GPU book of the run's state folder, as saved: its sessions and leases. */
function books(env: Env): {sessions: Record<string, unknown>; leases: Record<string, unknown>}[] {
  const dir = join(env.GPU_COSPLAY_STATE_DIR!, 'gpus')
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json') && !f.startsWith('.'))
    .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')))
    .map((book) => ({sessions: book.sessions, leases: book.leases}))
}

/** No session left anywhere: none in a book, none for ps, nothing for recover to roll back or release. */
function expectNoTrace(env: Env): void {
  expect(books(env)).toEqual([{sessions: {}, leases: {}}])
  expect(runJson(['ps'], env).json).toEqual([])
  const recovered = runJson(['recover'], env)
  expect(recovered.exitCode).toBe(0)
  expect(recovered.json.gpus.flatMap((gpu: {recovered: string[]}) => gpu.recovered)).toEqual([])
  expect(recovered.json.releasedNames).toEqual([])
}

describe('nvidia-smi refuses a change', () => {
  it('the first change: exit 4, nothing is put back that never changed, and the session leaves no trace', () => {
    const {sim, env, before} = host(true)
    const result = runJson(UP, env)
    expect({exit: result.exitCode, code: result.json.error?.code}).toEqual({exit: 4, code: 'SMI_PERMISSION'})
    expect(mutatingCalls(sim)).toEqual([['-i', '0', '-pm', '1']])
    expect(gpuState(sim)).toEqual(before)
    expectNoTrace(env)
    // the name is free again, and the error sends nobody to recover
    const again = runCli(UP, env)
    expect(again.exitCode).toBe(4)
    expect(again.stderr).not.toMatch(/recover|SESSION_EXISTS|already exists/)
    expectNoTrace(env)
  }, 60_000)

  it('a later change: the earlier ones are undone, and the session leaves no trace', () => {
    const {sim, env, before} = host(['-cgi'])
    const result = runJson(UP, env)
    expect({exit: result.exitCode, code: result.json.error?.code}).toEqual({exit: 4, code: 'SMI_PERMISSION'})
    expect(result.json.error.fix.join(' ')).not.toMatch(/recover/)
    expect(mutatingCalls(sim).map((argv) => argv.join(' '))).toEqual(['-i 0 -pm 1', '-i 0 -mig 1', 'mig -i 0 -cgi 19 -C', '-i 0 -mig 0', '-i 0 -pm 0'])
    expect(gpuState(sim)).toEqual(before)
    expectNoTrace(env)
  }, 60_000)
})

describe('a change whose outcome is unknown', () => {
  it('is undone like one that happened; what could not be undone is left to recover, and the error says so', () => {
    const {sim, env, before} = host(false)
    // -pl fails without saying why (it may have acted), and putting the clocks back fails as well
    sim.set('faults', [
      {at: 1, action: 'fail', match: '-pl'},
      {at: 1, action: 'fail', match: '-rgc'},
    ])
    const result = runJson(UP, env)
    expect({exit: result.exitCode, code: result.json.error?.code}).toEqual({exit: 3, code: 'SMI_FAILED'})
    // the power limit it may have set is written back to the value found
    expect(mutatingCalls(sim).filter((argv) => argv.includes('-pl'))).toEqual([
      ['-i', '0', '-pl', '200'],
      ['-i', '0', '-pl', '650'],
    ])
    expect(result.json.error.fix[0]).toMatch(/^could not undo everything \(.*\); run gpu-cosplay recover$/)
    expect(runJson(['ps'], env).json).toEqual([expect.objectContaining({name: 'refused', phase: 'starting'})])

    const recovered = runJson(['recover'], env)
    expect(recovered.json.gpus[0].recovered).toEqual(['refused'])
    expect(gpuState(sim)).toEqual(before)
    expectNoTrace(env)
  }, 60_000)

  it('the note reaches the terminal too, first in the hint', () => {
    const {sim, env} = host(false)
    sim.set('faults', [
      {at: 1, action: 'fail', match: '-pl'},
      {at: 1, action: 'fail', match: '-rgc'},
    ])
    const result = runCli(UP, env)
    expect(result.exitCode).toBe(3)
    expect(result.stderr).toMatch(/^gpu-cosplay: nvidia-smi -i 0 -pl 200 failed: Unknown Error \(could not undo everything \(.*\); run gpu-cosplay recover\)$/m)
  }, 60_000)
})
