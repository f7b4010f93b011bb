import {crashCases, crashPoints, freshHost, killDuring} from '../support/crash-points.js'
import {cleanupTemps, runCli, runJson} from '../support/run-cli.js'
import {gpuState, startCli, waitForCall} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

// GTX 1650 with --match fp32 locks the clock, so an `up` on an H200 with MIG off makes every kind of
// change: persistence, MIG mode, GPU instance, compute instance, clock lock, power limit.
const UP = ['up', '1650', '--match', 'fp32', '--no-container', '--name', 'victim']

const upPoints = crashPoints(UP, () => undefined)

describe('kill -9 during up, then recover', () => {
  it('covers every kind of change', () => {
    expect(upPoints.map((argv) => argv.find((a) => a.startsWith('-') && a !== '-i' && a !== '-gi'))).toEqual(
      expect.arrayContaining(['-pm', '-mig', '-cgi', '-lgc', '-pl']),
    )
  })

  it.each(crashCases(upPoints))(
    'killed in "%s" (%s): the GPU returns to its state before up',
    async (_label, action, call) => {
      const sim = freshHost()
      const env = sim.env()
      const before = gpuState(sim)
      await killDuring(sim, env, UP, call, action)
      const recovered = runJson(['recover'], env)
      expect(recovered.exitCode).toBe(0)
      expect(recovered.json.gpus[0].recovered).toEqual(['victim'])
      expect(gpuState(sim)).toEqual(before)
      expect(runJson(['ps'], env).json).toEqual([])
      // the name is free again
      expect(runCli(UP, env).exitCode).toBe(0)
    },
    30_000,
  )
})

describe('Ctrl-C during up', () => {
  it('finishes the step in flight, undoes everything, and exits non-zero', async () => {
    const sim = freshHost()
    const env = sim.env()
    const before = gpuState(sim)
    sim.set('faults', [{at: 1, action: 'delay', seconds: 1.5, match: '-cgi'}])
    const running = startCli(UP, env)
    await waitForCall(sim, (c) => c.argv.includes('-mig'))
    await new Promise((r) => setTimeout(r, 300))
    running.kill('SIGINT')
    const result = await running.done
    expect(result.exitCode).not.toBe(0)
    expect(result.stderr).toMatch(/interrupted/)
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(['ps'], env).json).toEqual([])
  }, 30_000)
})
