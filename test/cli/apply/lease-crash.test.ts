/** kill -9 at every change a `lease hold` or `lease release` makes, then `recover` (or the next command) restores. */
import {crashCases, crashPoints, expectRecoverUndoes, freshHost, freshScene, killDuring} from '../support/crash-points.js'
import {flagsOf, HOLD_A, release} from '../support/lease-args.js'
import {cleanupTemps, runCli, runJson} from '../support/run-cli.js'
import {gpuState, startCli, waitForCall} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

const holdPoints = crashPoints(HOLD_A, () => undefined)
const releasePoints = crashPoints(release('slurm-job-42'), (_sim, env) => {
  if (runCli(HOLD_A, env).exitCode !== 0) throw new Error('hold failed')
})

describe('kill -9 during lease hold or release, then recover', () => {
  it('covers every change a hold and a release make', () => {
    expect(flagsOf(holdPoints)).toEqual(['-pm', '-lgc', '-pl'])
    expect(flagsOf(releasePoints).sort()).toEqual(['-pl', '-pm', '-rgc'])
  })

  it.each(crashCases(holdPoints))(
    'hold killed in "%s" (%s): the GPU returns to its state before the hold',
    (_label, action, call) => expectRecoverUndoes(HOLD_A, 'lease:slurm-job-42', call, action),
    30_000,
  )

  it.each(crashCases(releasePoints))(
    'release killed in "%s" (%s): recover finishes it',
    async (_label, action, call) => {
      const {sim, env, before} = freshScene()
      expect(runCli(HOLD_A, env).exitCode).toBe(0)
      await killDuring(sim, env, release('slurm-job-42'), call, action)
      expect(runJson(['recover'], env).exitCode).toBe(0)
      expect(gpuState(sim)).toEqual(before)
      expect(runJson(['ps'], env).json).toEqual([])
    },
    30_000,
  )

  it.each([
    ['lock-clocks', '-lgc', 'recover'],
    ['set-power-limit', '-pl', 'the next lease command'],
  ] as const)(
    'killed after %s (%s) acted and before it was recorded (the engine pause): %s rolls it back',
    async (kind, flag, by) => {
      const {sim, env, before} = freshScene()
      const running = startCli(HOLD_A, {...env, GPU_COSPLAY_TEST_PAUSE_AFTER_STEP: kind})
      await waitForCall(sim, (c) => c.argv.includes(flag))
      running.kill('SIGKILL')
      await running.done
      expect(gpuState(sim)).not.toEqual(before)
      if (by === 'recover') {
        expect(runJson(['recover'], env).json.gpus[0].recovered).toEqual(['lease:slurm-job-42'])
      } else {
        // any command that opens the GPU's book rolls the dead hold back before it acts
        const other = runJson(release('someone-else'), env)
        expect(other.exitCode).toBe(0)
        expect(other.json.released).toBe(false)
      }
      expect(gpuState(sim)).toEqual(before)
      expect(runJson(['ps'], env).json).toEqual([])
    },
    30_000,
  )

  it('a finished hold is active: its process is gone, and recover leaves it alone', () => {
    const sim = freshHost()
    const env = sim.env()
    expect(runCli(HOLD_A, env).exitCode).toBe(0)
    const held = gpuState(sim)
    const recovered = runJson(['recover'], env)
    expect(recovered.json.gpus[0].recovered).toEqual([])
    expect(gpuState(sim)).toEqual(held)
    expect(runJson(['ps'], env).json[0]).toMatchObject({name: 'lease:slurm-job-42', phase: 'active', crashed: false})
  }, 30_000)
})
