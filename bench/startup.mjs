// Start-up of the read-only commands next to the Python original (deepghs/gpu-cosplay), run side by side,
// interleaved run by run so that noise on this shared machine hits both alike. Medians and ratios only.
//
// The original is looked for in $GPU_COSPLAY_PY_ORIGINAL (a checkout: the folder holding gpu_cosplay/), run as
// `python3 -m gpu_cosplay`; without it this part says so and is skipped. It has no `plan --on`: its `plan` always
// reads the GPU, so it runs against a static one-GPU H200 nvidia-smi stand-in (a shell script printing captures),
// which costs it four process starts that ours does not make.
import {spawnSync} from 'node:child_process'
import {chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {median} from './bench-kit.mjs'

const RUNS = Number(process.env.BENCH_RUNS ?? 21)
const root = new URL('..', import.meta.url).pathname
const original = process.env.GPU_COSPLAY_PY_ORIGINAL
const fixtures = join(root, 'test/fixtures/nvidia-smi')

function once([file, ...args], options) {
  const start = process.hrtime.bigint()
  const result = spawnSync(file, args, {...options, encoding: 'utf8'})
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  if (result.status !== 0) throw new Error(`${[file, ...args].join(' ')} failed (${result.status}): ${result.stderr}`)
  return ms
}

/** medians of each command, run in turn RUNS times after two warm-up rounds */
function sideBySide(commands) {
  const times = commands.map(() => [])
  for (let round = -2; round < RUNS; round++) {
    commands.forEach((c, i) => {
      const ms = once(c.argv, c.options)
      if (round >= 0) times[i].push(ms)
    })
  }
  return times.map((t) => Math.round(median(t) * 10) / 10)
}

if (original === undefined || !existsSync(join(original, 'gpu_cosplay'))) {
  console.log('startup vs the Python original: skipped (set GPU_COSPLAY_PY_ORIGINAL to a checkout of deepghs/gpu-cosplay)')
} else {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-startup-'))
  const fakeBin = join(dir, 'bin')
  const fake = join(fakeBin, 'nvidia-smi')
  spawnSync('mkdir', ['-p', fakeBin])
  writeFileSync(
    fake,
    `#!/bin/sh
case "$*" in
  --query-gpu*) echo "0, NVIDIA H200, GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732, 9.0, 143771, Disabled" ;;
  "mig -lgip"*) cat '${join(fixtures, 'h200-sxm-141gb__mig-lgip-wide-81col-excerpt-from-unit-test.txt')}' ;;
  *) cat '${join(fixtures, 'h200-sxm-141gb__nvidia-smi-a.txt')}' ;;
esac
`,
  )
  chmodSync(fake, 0o755)
  const env = {...process.env, PATH: `${fakeBin}:${process.env.PATH}`, GPU_COSPLAY_STATE_DIR: join(dir, 'state'), NO_COLOR: '1'}
  const ours = (args) => ({argv: [process.execPath, join(root, 'bin/run.js'), ...args], options: {env, cwd: root}})
  // the same command through the full oclif CLI (what every command ran before bin/run.js had a fast path)
  const oursFull = (args) => ({...ours(args), options: {env: {...env, GPU_COSPLAY_NO_FAST: '1'}, cwd: root}})
  const theirs = (args) => ({argv: ['python3', '-m', 'gpu_cosplay', ...args], options: {env, cwd: original}})
  const pairs = [
    ['ls', ['ls'], ['ls']],
    ['info 3090', ['info', '3090'], ['info', '3090']],
    ['plan 3090 --on h200 --json (python: plan 3090)', ['plan', '3090', '--on', 'h200', '--json'], ['plan', '3090']],
  ]
  const floor = sideBySide([{argv: [process.execPath, '-e', '0']}, {argv: ['python3', '-c', '0']}])
  console.log(`\nstart-up vs the Python original: ${RUNS} interleaved runs, median ms (floors: node -e 0 ${floor[0]}, python3 -c 0 ${floor[1]})`)
  const rows = []
  const ratio = (a, b) => Math.round((a / b) * 100) / 100
  for (const [name, oursArgs, theirArgs] of pairs) {
    const [oursMs, fullMs, pythonMs] = sideBySide([ours(oursArgs), oursFull(oursArgs), theirs(theirArgs)])
    rows.push({name, oursMs, pythonMs, ratio: ratio(oursMs, pythonMs), fullOclifMs: fullMs, fullOclifRatio: ratio(fullMs, pythonMs)})
    console.log(
      `${name.padEnd(48)} ours ${String(oursMs).padStart(6)}  python ${String(pythonMs).padStart(6)}  ratio ${ratio(oursMs, pythonMs).toFixed(2)}` +
        `   (full oclif path ${fullMs}, ratio ${ratio(fullMs, pythonMs).toFixed(2)})`,
    )
  }
  console.log(JSON.stringify({startup: {runs: RUNS, floors: {node: floor[0], python: floor[1]}, rows}}))
  rmSync(dir, {recursive: true, force: true})
}
