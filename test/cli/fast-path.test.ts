/**
 * bin/run.js runs ls, info and plan --on through dist/fast.js (the same command classes without oclif) and
 * falls back to the full CLI for anything that path does not handle. Both must print the same.
 */
import {afterAll, expect, it, jest} from '@jest/globals'

import {baseEnv, cleanupTemps, runCli} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

it.each([
  [['ls']],
  [['ls', '--json']],
  [['ls', '--arch', 'Ada']],
  [['ls', '--arch=hopper', '--json']],
  [['info', '3090']],
  [['info', 'RTX 4090', '--json']],
  [['plan', '3090', '--on', 'h200']],
  [['plan', 't4', '--on=h100-sxm', '--match', 'fp32', '--json']],
  [['plan', '--json', '3090', '--on', 'a30', '--match=bandwidth']],
  // these fall back to the full CLI
  [['ls', '--arch', 'foo']],
  [['ls', '-h']],
  [['info']],
  [['info', 'voodoo5', '--json']],
  [['plan', '3090', '--on', 'h200', '--host-gpu', '0']],
  [['plan', '3090', '--on', 'voodoo5']],
  [['plan', '3090', '--on', 'h200', '--match', 'speed']],
  [['plan', '3090', '--on']],
])('%j prints the same with and without the fast path', (args) => {
  const env = baseEnv()
  const fast = runCli(args, env)
  const full = runCli(args, {...env, GPU_COSPLAY_NO_FAST: '1'})
  expect(fast).toEqual(full)
})
