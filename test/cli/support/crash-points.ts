/**
 * kill -9 tests: the crash points are the mutating nvidia-smi calls a clean run makes (taken from the tool, not
 * hand-picked), and a run is killed while one of them hangs before or after acting.
 */
import {expect} from '@jest/globals'

import {type Env, runCli, runJson, Sim} from './run-cli.js'
import {gpuState, killHungSims, mutatingCalls, startCli, waitForCall} from './run-cli-async.js'

/** An H200 whose power limit and persistence mode are not the defaults, so a restore to "as found" is visible. */
export function freshHost(): Sim {
  return Sim.create('h200', 1).setAll({'gpus.0.power_limit': 650, 'gpus.0.persistence': false})
}

/** A fresh host, its CLI environment, and the GPU state a restore must bring back. */
export function freshScene(): {sim: Sim; env: Env; before: unknown[]} {
  const sim = freshHost()
  return {sim, env: sim.env(), before: gpuState(sim)}
}

export function crashPoints(args: readonly string[], prepare: (sim: Sim, env: Env) => void): string[][] {
  const sim = freshHost()
  const env = sim.env()
  prepare(sim, env)
  sim.clearCalls()
  const result = runCli(args, env)
  if (result.exitCode !== 0) throw new Error(`clean run failed: ${result.stderr}`)
  return mutatingCalls(sim)
}

/** each crash point twice: the call hangs before it changes anything, and after (a crash between acting and recording) */
export function crashCases(points: readonly string[][]): Array<readonly [string, 'hang' | 'hang-after', string[]]> {
  return points.flatMap((call) => (['hang', 'hang-after'] as const).map((action) => [call.join(' '), action, call] as const))
}

/** kill -9 while the `nth` call that matches `call` hangs (two calls of one argv, e.g. two ranks' `-cgi`, are 1 and 2) */
export async function killDuring(sim: Sim, env: Env, args: readonly string[], call: readonly string[], action: 'hang' | 'hang-after', nth = 1): Promise<void> {
  sim.set('faults', [{at: nth, action, match: call.join(' ')}])
  const running = startCli(args, env)
  await waitForCall(sim, (c) => c.fault === action)
  running.kill('SIGKILL')
  await running.done
  killHungSims(sim)
  sim.set('faults', [])
}

/**
 * The crash test of a command that makes a new session: kill -9 while `call` hangs, then `recover` rolls back
 * exactly `session`, the GPU is as before, nothing is listed, and the same command runs again.
 */
export async function expectRecoverUndoes(args: readonly string[], session: string, call: readonly string[], action: 'hang' | 'hang-after'): Promise<void> {
  const {sim, env, before} = freshScene()
  await killDuring(sim, env, args, call, action)
  const recovered = runJson(['recover'], env)
  expect(recovered.exitCode).toBe(0)
  expect(recovered.json.gpus[0].recovered).toEqual([session])
  expect(gpuState(sim)).toEqual(before)
  expect(runJson(['ps'], env).json).toEqual([])
  expect(runCli(args, env).exitCode).toBe(0)
}
