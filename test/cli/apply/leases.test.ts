import {cleanupTemps, runCli, runJson, Sim} from '../support/run-cli.js'
import {gpuState} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

// A GTX 1650 wants the clock locked low (~945 MHz on a 1g slice for the ~3 TFLOPS it measures: 16 H200 SMs measure
// 6.2 at 1980 MHz); an RTX 3060 wants a different lock.
// Clock and power act on the whole GPU, so the second session must share what the first set, or refuse.
describe('two sessions with different clock plans on one GPU', () => {
  function firstSession() {
    const sim = Sim.create('h200', 1).set('gpus.0.power_limit', 650)
    const env = sim.env()
    const before = gpuState(sim)
    const first = runJson(['up', '1650', '--match', 'fp32', '--no-container', '--name', 'first'], env)
    expect(first.exitCode).toBe(0)
    expect(first.json.clockMHz).toBeGreaterThan(600)
    expect(first.json.clockMHz).toBeLessThan(1000)
    return {sim, env, before, lockMHz: first.json.clockMHz as number}
  }

  it('by default the second shares the lock in force, plans with it, and says so; the last down restores', () => {
    const {sim, env, before, lockMHz} = firstSession()
    const alone = runJson(['plan', '3060', '--on', 'h200', '--match', 'fp32']).json
    expect(alone.clockMHz).not.toBe(lockMHz)

    const second = runJson(['up', '3060', '--match', 'fp32', '--no-container', '--name', 'second'], env)
    expect(second.exitCode).toBe(0)
    expect(second.json.clockMHz).toBe(lockMHz)
    expect(second.json.plan.effectiveClockMHz).toBe(lockMHz)
    expect(second.json.warnings.join('\n')).toContain(`locked at ${lockMHz} MHz`)
    expect((gpuState(sim)[0] as any).clocksLocked).toBeTruthy()

    const status = runJson(['status'], env).json
    expect(status.gpus[0].leases.clocks.holders.sort()).toEqual(['first', 'second'])

    expect(runCli(['down', 'first'], env).exitCode).toBe(0)
    // still held by the second session: the lock stays
    expect((gpuState(sim)[0] as any).clocksLocked).toBeTruthy()
    expect(runCli(['down', 'second'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  }, 60_000)

  it('with --strict the second fails cleanly and changes nothing', () => {
    const {sim, env} = firstSession()
    const during = gpuState(sim)
    const second = runJson(['up', '3060', '--match', 'fp32', '--no-container', '--name', 'second', '--strict'], env)
    expect(second.exitCode).toBe(3)
    expect(second.json.error.code).toBe('LEASE_CONFLICT')
    expect(gpuState(sim)).toEqual(during)
    expect(runJson(['ps'], env).json.map((s: any) => s.name)).toEqual(['first'])
  }, 60_000)

  it('with --strict and the same values it joins', () => {
    const {env} = firstSession()
    const again = runJson(['up', '1650', '--match', 'fp32', '--no-container', '--name', 'twin', '--strict'], env)
    expect(again.exitCode).toBe(0)
  }, 60_000)
})
