// npm run bench: median wall time of the read-only commands (built CLI, as users run it) and how many
// times each calls nvidia-smi, against the simulator emulating an 8-GPU H200 box. Medians and ratios
// only: these machines are shared and noisy.
import {execFileSync, spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, existsSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import directPython from '../test/direct-python.mjs'
import {median} from './bench-kit.mjs'

// the simulator stands in for a compiled nvidia-smi: time it without a version manager's python shim (one row below
// times a simulator start both ways)
const pathAsFound = process.env.PATH
directPython()
const RUNS = Number(process.env.BENCH_RUNS ?? 21)
const root = new URL('..', import.meta.url).pathname
const sim = join(root, 'test/sim/nvidia-smi')
const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-bench-'))
const state = join(dir, 'sim.json')
const env = {...process.env, GPU_COSPLAY_SIM_STATE: state, GPU_COSPLAY_NVIDIA_SMI: sim, GPU_COSPLAY_STATE_DIR: join(dir, 'state')}
execFileSync(sim, ['--sim-init', '--model', 'h200', '--gpus', '8'], {env})

const callLog = `${state}.calls.log`
const countCalls = () => (existsSync(callLog) ? readFileSync(callLog, 'utf8').split('\n').filter(Boolean).length : 0)

function timeCommand(argv, env) {
  for (let i = 0; i < 2; i++) spawnSync(argv[0], argv.slice(1), {env}) // warm the page cache
  const times = []
  let calls = 0
  for (let i = 0; i < RUNS; i++) {
    const before = countCalls()
    const start = process.hrtime.bigint()
    const result = spawnSync(argv[0], argv.slice(1), {env, encoding: 'utf8'})
    times.push(Number(process.hrtime.bigint() - start) / 1e6)
    if (result.status !== 0) throw new Error(`${argv.join(' ')} failed: ${result.stderr}`)
    calls = countCalls() - before
  }
  return {medianMs: Math.round(median(times) * 10) / 10, smiCalls: calls}
}

const cli = [process.execPath, join(root, 'bin/run.js')]
const rows = [
  ['node -e 0 (floor)', [process.execPath, '-e', '0']],
  ['ls', [...cli, 'ls']],
  ['info 3090', [...cli, 'info', '3090']],
  ['plan 3090 --on h200', [...cli, 'plan', '3090', '--on', 'h200']],
  ['plan 3090 --host-gpu 0 (8x H200 sim)', [...cli, 'plan', '3090', '--host-gpu', '0']],
  ['simulator nvidia-smi -L', [sim, '-L']],
  ['the same, compiled at every start', ['python3', '-S', join(root, 'test/sim/nvidia_smi_sim.py'), '-L']],
  ['the same, python3 as PATH had it', [sim, '-L'], {...env, PATH: pathAsFound}],
].map(([name, argv, withEnv = env]) => ({name, ...timeCommand(argv, withEnv)}))

const floor = rows[0].medianMs
console.log(`gpu-cosplay bench: ${RUNS} runs each, median wall time (node ${process.version}, ${new Date().toISOString()})`)
for (const r of rows) {
  console.log(`${r.name.padEnd(40)} ${String(r.medianMs).padStart(7)} ms  x${(r.medianMs / floor).toFixed(2)} of node's floor  nvidia-smi calls: ${r.smiCalls}`)
}

// up/down on the same simulated 8x H200: how many nvidia-smi calls each makes (deterministic), with the argv of
// each call. Classic path (no MPS: GPU_COSPLAY_MPS_CONTROL unset) and with the MPS stand-in.
const SMI_TARGETS = {'first up (MIG off)': null, 'up (MIG on)': 7, 'down of one': 5, 'last down (restores)': 7}
function smiCallCounts(extraEnv) {
  const sub = mkdtempSync(join(tmpdir(), 'gpu-cosplay-bench-calls-'))
  const subState = join(sub, 'sim.json')
  const {GPU_COSPLAY_MPS_CONTROL: _unset, ...inherited} = process.env
  const e = {...inherited, GPU_COSPLAY_SIM_STATE: subState, GPU_COSPLAY_NVIDIA_SMI: sim, GPU_COSPLAY_STATE_DIR: join(sub, 'state'), ...extraEnv}
  execFileSync(sim, ['--sim-init', '--model', 'h200', '--gpus', '8'], {env: e})
  const log = `${subState}.calls.log`
  const steps = [
    ['first up (MIG off)', ['up', '2060', '--no-container', '--name', 'a']],
    ['up (MIG on)', ['up', '2060', '--no-container', '--name', 'b']],
    ['down of one', ['down', 'a']],
    ['last down (restores)', ['down', 'b']],
  ]
  const out = steps.map(([name, args]) => {
    rmSync(log, {force: true})
    const result = spawnSync(process.execPath, [join(root, 'bin/run.js'), ...args], {env: e, encoding: 'utf8'})
    if (result.status !== 0) throw new Error(`${args.join(' ')} failed: ${result.stderr}`)
    const calls = existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l).argv.join(' '))
      : []
    return {name, calls: calls.length, target: SMI_TARGETS[name], argv: calls}
  })
  rmSync(sub, {recursive: true, force: true})
  return out
}
const smiCounts = {classic: smiCallCounts({}), mps: smiCallCounts({GPU_COSPLAY_MPS_CONTROL: join(root, 'test/sim/nvidia-cuda-mps-control')})}
for (const [path, counts] of Object.entries(smiCounts)) {
  console.log(`nvidia-smi calls, up 2060 --no-container / down on the 8x H200 sim (${path}):`)
  for (const c of counts) {
    const verdict = c.target === null ? '' : c.calls <= c.target ? ` (target <= ${c.target}: ok)` : ` (target <= ${c.target}: OVER)`
    console.log(`  ${c.name.padEnd(22)} ${String(c.calls).padStart(2)}${verdict}: ${c.argv.join(' | ')}`)
  }
}
console.log(JSON.stringify({runs: RUNS, results: rows, smiCalls: smiCounts}))
rmSync(dir, {recursive: true, force: true})

// what the ordinal mapping of up --count N adds per torch call, and what a TorchFunctionMode would
await import('./ranks.mjs')

// ls, info and plan --on next to the Python original (skipped unless GPU_COSPLAY_PY_ORIGINAL points at a checkout)
await import('./startup.mjs')

// the container part runs only where a Docker engine answers (it says so and skips otherwise)
await import('./e2e.mjs')

// what the engine boundary costs a member's up on a shared box, against root's own (root only; skipped otherwise)
await import('./member-up.mjs')
