import {crashCases, crashPoints, expectRecoverUndoes, freshScene} from '../support/crash-points.js'
import {cleanupTemps, runJson} from '../support/run-cli.js'
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
    (_label, action, call) => expectRecoverUndoes(UP, 'victim', call, action),
    30_000,
  )
})

describe('Ctrl-C during up', () => {
  it('finishes the step in flight, undoes everything, and exits non-zero', async () => {
    const {sim, env, before} = freshScene()
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
