// Start-up of the read-only commands in this checkout next to another one (e.g. a worktree of an older commit),
// interleaved run by run and alternating which goes first, so that neither the machine's drift nor run order
// favours one: medians and ratios. The other checkout must be built (npm ci && npm run build there).
//   node bench/compare-startup.mjs /path/to/other-checkout        (BENCH_RUNS, default 15)
import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {checkouts, median} from './bench-kit.mjs'

const RUNS = Number(process.env.BENCH_RUNS ?? 15)
const trees = checkouts('node bench/compare-startup.mjs OTHER_CHECKOUT')
const COMMANDS = [['ls'], ['info', '3090'], ['plan', '3090', '--on', 'h200']]
const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-compare-startup-'))
// no GPU and an empty state directory: what a fresh machine sees
const env = {...process.env, GPU_COSPLAY_STATE_DIR: join(dir, 'state'), GPU_COSPLAY_NVIDIA_SMI: '/nonexistent/nvidia-smi', NO_COLOR: '1'}

try {
  for (const argv of COMMANDS) {
    const ms = {other: [], this: []}
    for (let i = 0; i < RUNS; i++) {
      for (const which of i % 2 === 0 ? ['other', 'this'] : ['this', 'other']) {
        const started = process.hrtime.bigint()
        const run = spawnSync(process.execPath, [join(trees[which], 'bin/run.js'), ...argv], {env, cwd: dir, stdio: ['ignore', 'ignore', 'pipe']})
        if (run.status !== 0) throw new Error(`${which}: ${argv.join(' ')} exited ${run.status}: ${run.stderr}`)
        ms[which].push(Number(process.hrtime.bigint() - started) / 1e6)
      }
    }
    const [a, b] = [median(ms.other), median(ms.this)]
    console.log(`${argv.join(' ').padEnd(22)} other ${a.toFixed(1)} ms  this ${b.toFixed(1)} ms  this/other x${(b / a).toFixed(2)}`)
  }
} finally {
  rmSync(dir, {recursive: true, force: true})
}
