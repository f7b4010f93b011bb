// `up` to first ssh login of this checkout next to another one (e.g. a worktree of an older commit), interleaved
// run by run on one simulated H200, alone on the GPU and beside another session: medians and ratios, so a
// change can be judged on a noisy machine. Needs Docker and the e2e base image (test/e2e/setup-docker.sh), and
// the other checkout built (npm ci && npm run build there).
//   node bench/compare-up.mjs /path/to/other-checkout        (BENCH_UP_RUNS, default 7)
import {execFileSync, spawnSync} from 'node:child_process'
import {mkdirSync, mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {checkouts, median} from './bench-kit.mjs'

const BASE_IMAGE = process.env.BENCH_BASE_IMAGE ?? 'gpu-cosplay-test-base:bookworm'
const RUNS = Number(process.env.BENCH_UP_RUNS ?? 7)
const trees = checkouts('node bench/compare-up.mjs OTHER_CHECKOUT')
const here = trees.this

const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-compare-up-'))
mkdirSync('/var/tmp/gpu-cosplay-sim', {recursive: true})
const state = `/var/tmp/gpu-cosplay-sim/compare-${process.pid}.json` // where the stub runtime hook looks
const ws = join(dir, 'ws')
mkdirSync(ws)
const sim = join(here, 'test/sim/nvidia-smi')

try {
  for (const mode of ['alone', 'beside']) {
    // a fresh state directory and GPU per mode: the two versions may write books the other cannot read
    const env = {...process.env, GPU_COSPLAY_SIM_STATE: state, GPU_COSPLAY_NVIDIA_SMI: sim, GPU_COSPLAY_STATE_DIR: join(dir, `state-${mode}`)}
    execFileSync(sim, ['--sim-init', '--model', 'h200', '--gpus', '1'], {env})
    const run = (tree, args) => {
      const r = spawnSync(process.execPath, [join(tree, 'bin/run.js'), ...args], {env, encoding: 'utf8'})
      if (r.status !== 0) throw new Error(`${tree}: gpu-cosplay ${args.join(' ')} failed: ${r.stdout}${r.stderr}`)
    }
    for (const [name, tree] of Object.entries(trees)) run(tree, ['build', '--base', BASE_IMAGE, '--tag', `gpu-cosplay-compare:${name}`, '--json'])
    // beside: another session keeps MIG on, so each up only adds its slice
    if (mode === 'beside') run(here, ['up', 't4', '--no-container', '--name', 'compare-anchor', '--json'])
    const times = {other: [], this: []}
    for (let i = 0; i < RUNS; i++) {
      for (const [name, tree] of Object.entries(trees)) {
        const start = process.hrtime.bigint()
        run(tree, ['up', '3090', '--name', `compare-${name}`, '--image', `gpu-cosplay-compare:${name}`, '--workspace', ws, '--json'])
        times[name].push(Number(process.hrtime.bigint() - start) / 1e6)
        run(tree, ['down', `compare-${name}`, '--json'])
      }
    }
    if (mode === 'beside') run(here, ['down', 'compare-anchor', '--json'])
    const [other, mine] = [median(times.other), median(times.this)]
    console.log(
      `up -> first ssh login, ${mode === 'alone' ? 'alone on the GPU' : 'beside another session'}, medians of ${RUNS}: ` +
        `other ${Math.round(other)} ms, this ${Math.round(mine)} ms, ratio ${(mine / other).toFixed(2)}`,
    )
  }
} finally {
  for (const name of Object.keys(trees)) spawnSync('docker', ['rm', '-f', `gpu-cosplay-compare-${name}`], {stdio: 'ignore'})
  rmSync(dir, {recursive: true, force: true})
  for (const suffix of ['', '.lock', '.calls.log']) rmSync(state + suffix, {force: true})
}
