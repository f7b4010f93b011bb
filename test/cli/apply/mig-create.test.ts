/**
 * `up` makes its slice with one `mig -cgi P -C` (the GPU instance and its default compute instance): on a driver
 * that does not print the compute instance's ID, `down` still removes exactly what the session made.
 */
import {cleanupTemps, runCli, runJson, Sim} from '../support/run-cli.js'
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
})
