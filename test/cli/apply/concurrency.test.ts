import {cleanupTemps, runJson, Sim} from '../support/run-cli.js'
import {gpuState, runCliAsync} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

// The team scene: seven people bring up a 1g slice on one H200 at the same moment, one more is too late,
// three leave together, the rest leave later. Nobody's instance may be touched by anybody else.
describe('seven concurrent sessions on one H200', () => {
  it('all get distinct instances, the 8th fails cleanly, downs leave others alone, the last restores the GPU', async () => {
    const sim = Sim.create('h200', 1)
    // Non-default values set by an administrator before we came: they must come back, not the defaults.
    sim.setAll({'gpus.0.power_limit': 650, 'gpus.0.persistence': false})
    const pristine = gpuState(sim)
    const env = sim.env()

    const ups = await Promise.all(Array.from({length: 7}, (_, i) => runCliAsync(['up', '2060', '--no-container', '--name', `s${i}`, '--json'], env)))
    for (const up of ups) expect({exit: up.exitCode, err: up.stderr}).toEqual({exit: 0, err: ''})
    const sessions = ups.map((u) => JSON.parse(u.stdout))
    const gis = sessions.map((s) => s.mig.gpuInstanceId)
    expect(new Set(gis).size).toBe(7)
    expect(new Set(sessions.map((s) => s.mig.uuid)).size).toBe(7)
    expect((gpuState(sim)[0] as any).instances).toHaveLength(7)

    const full = gpuState(sim)
    const eighth = runJson(['up', '2060', '--no-container', '--name', 's7'], env)
    expect(eighth.exitCode).toBe(3)
    expect(eighth.json.error.code).toBe('MIG_NO_FREE_SLOT')
    expect(gpuState(sim)).toEqual(full)

    const downs = await Promise.all(['s0', 's3', 's5'].map((n) => runCliAsync(['down', n, '--json'], env)))
    for (const d of downs) expect(d.exitCode).toBe(0)
    const left = (gpuState(sim)[0] as any).instances.map((i: any) => i.gi).sort()
    const expected = [1, 2, 4, 6].map((i) => gis[i]).sort()
    expect(left).toEqual(expected)
    const ps = runJson(['ps'], env).json
    expect(ps.map((s: any) => s.name).sort()).toEqual(['s1', 's2', 's4', 's6'])

    const rest = await Promise.all(['s1', 's2', 's4', 's6'].map((n) => runCliAsync(['down', n], env)))
    for (const d of rest) expect(d.exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(pristine)
    expect(runJson(['ps'], env).json).toEqual([])
  }, 120_000)
})
