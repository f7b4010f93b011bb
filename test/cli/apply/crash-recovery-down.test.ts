/** kill -9 during `down`, then `recover`: the down is finished and another session on the GPU is left alone. */
import {crashCases, crashPoints, freshHost, killDuring} from '../support/crash-points.js'
import {cleanupTemps, type Env, runCli, runJson, type Sim} from '../support/run-cli.js'
import {gpuState} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

const UP = ['up', '1650', '--match', 'fp32', '--no-container', '--name', 'victim']

describe('kill -9 during down, then recover', () => {
  // Another session on the same GPU must survive the crash and the recovery untouched.
  const prepare = (_sim: Sim, env: Env) => {
    if (runCli(['up', '2060', '--no-container', '--name', 'bystander'], env).exitCode !== 0) throw new Error('bystander up failed')
    if (runCli(UP, env).exitCode !== 0) throw new Error('victim up failed')
  }
  const downPoints = crashPoints(['down', 'victim'], prepare)

  it('covers the changes down makes', () => {
    expect(downPoints.length).toBeGreaterThanOrEqual(2)
  })

  it.each(crashCases(downPoints))(
    'killed in "%s" (%s): recover finishes the down and leaves the other session alone',
    async (_label, action, call) => {
      const sim = freshHost()
      const env = sim.env()
      expect(runCli(['up', '2060', '--no-container', '--name', 'bystander'], env).exitCode).toBe(0)
      const withBystander = gpuState(sim)
      expect(runCli(UP, env).exitCode).toBe(0)
      await killDuring(sim, env, ['down', 'victim'], call, action)
      expect(runJson(['recover'], env).exitCode).toBe(0)
      expect(gpuState(sim)).toEqual(withBystander)
      expect(runJson(['ps'], env).json.map((s: any) => s.name)).toEqual(['bystander'])
    },
    30_000,
  )
})
