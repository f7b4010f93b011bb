import {cleanupTemps, type Env, runCli, runJson, Sim} from '../support/run-cli.js'
import {gpuState, killHungSims, mutatingCalls, startCli, waitForCall} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

// GTX 1650 with --match fp32 locks the clock, so an `up` on an H200 with MIG off makes every kind of
// change: persistence, MIG mode, GPU instance, compute instance, clock lock, power limit.
const UP = ['up', '1650', '--match', 'fp32', '--no-container', '--name', 'victim']

function freshHost(): Sim {
  return Sim.create('h200', 1).set('gpus.0.power_limit', 650).set('gpus.0.persistence', false)
}

/** The mutating calls a clean run makes: the crash points, taken from the tool rather than hand-picked. */
function crashPoints(args: readonly string[], prepare: (sim: Sim, env: Env) => void): string[][] {
  const sim = freshHost()
  const env = sim.env()
  prepare(sim, env)
  sim.clearCalls()
  const result = runCli(args, env)
  if (result.exitCode !== 0) throw new Error(`clean run failed: ${result.stderr}`)
  return mutatingCalls(sim)
}

async function killDuring(sim: Sim, env: Env, args: readonly string[], call: string[], action: 'hang' | 'hang-after'): Promise<void> {
  sim.set('faults', [{at: 1, action, match: call.join(' ')}])
  const running = startCli(args, env)
  await waitForCall(sim, (c) => c.fault === action)
  running.kill('SIGKILL')
  await running.done
  killHungSims(sim)
  sim.set('faults', [])
}

const upPoints = crashPoints(UP, () => undefined)

describe('kill -9 during up, then recover', () => {
  it('covers every kind of change', () => {
    expect(upPoints.map((argv) => argv.find((a) => a.startsWith('-') && a !== '-i' && a !== '-gi'))).toEqual(
      expect.arrayContaining(['-pm', '-mig', '-cgi', '-lgc', '-pl']),
    )
  })

  it.each(upPoints.flatMap((call) => (['hang', 'hang-after'] as const).map((action) => [call.join(' '), action, call] as const)))(
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

  it.each(downPoints.flatMap((call) => (['hang', 'hang-after'] as const).map((action) => [call.join(' '), action, call] as const)))(
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
