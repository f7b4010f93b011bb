/**
 * bin/run.js runs ls, info and plan --on through dist/fast.js (the same command classes without oclif) and
 * falls back to the full CLI for anything that path does not handle. Both must print the same, and the rows
 * meant for the fast path must really go through it (else every row would compare the full CLI with itself).
 */
import {spawnSync} from 'node:child_process'

import {afterAll, expect, it, jest} from '@jest/globals'

import {baseEnv, cleanupTemps, type Env, ROOT, runCli} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

/** What dist/fast.js's runFast(argv) answers: true when it handled the command itself. */
function fastHandles(args: readonly string[], env: Env): boolean {
  const script = `
    const {runFast} = await import('./dist/fast.js')
    const handled = await runFast(JSON.parse(process.argv[1]))
    process.stderr.write('\\nrunFast: ' + handled + '\\n')`
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script, JSON.stringify(args)], {
    cwd: ROOT,
    env: env as NodeJS.ProcessEnv,
    encoding: 'utf8',
    timeout: 20_000,
  })
  const answer = /\nrunFast: (true|false)\n$/.exec(result.stderr)
  if (result.status !== 0 || !answer) throw new Error(`cannot run dist/fast.js (run npm run build): ${result.stderr}`)
  return answer[1] === 'true'
}

it.each([
  [['ls'], true],
  [['ls', '--json'], true],
  [['ls', '--arch', 'Ada'], true],
  [['ls', '--arch=hopper', '--json'], true],
  [['info', '3090'], true],
  [['info', 'RTX 4090', '--json'], true],
  [['plan', '3090', '--on', 'h200'], true],
  [['plan', 't4', '--on=h100-sxm', '--match', 'fp32', '--json'], true],
  [['plan', '--json', '3090', '--on', 'a30', '--match=bandwidth'], true],
  [['plan', '3090', '--on', 'h200', '--output', 'k8s'], true],
  // these fall back to the full CLI
  [['plan', '3090', '--on', 'h200', '-o', 'k8s'], false],
  [['ls', '--arch', 'foo'], false],
  [['ls', '-h'], false],
  [['info'], false],
  [['info', 'voodoo5', '--json'], false],
  [['plan', '3090', '--on', 'h200', '--host-gpu', '0'], false],
  [['plan', '3090', '--on', 'voodoo5'], false],
  [['plan', '3090', '--on', 'h200', '--match', 'speed'], false],
  [['plan', '3090', '--on'], false],
])('%j prints the same with and without the fast path (fast path handles it: %j)', (args, handled) => {
  const env = baseEnv()
  expect(fastHandles(args, env)).toBe(handled)
  const fast = runCli(args, env)
  const full = runCli(args, {...env, GPU_COSPLAY_NO_FAST: '1'})
  expect(fast).toEqual(full)
})
