// What the ordinal mapping of several cosplayed GPUs (GPU_COSPLAY_RANKS, up --count N) adds per torch call: the
// hook's wrappers against the originals they keep, interleaved round by round in one process, on the stand-in torch
// (test/py/stubs, CUDA ordinals) and on a real torch where one imports (CPU builds: "cpu" devices pass through the
// mapping), next to what the TorchFunctionMode the hook used before adds to every op (runtime-hooks/bench_ranks.py).
// Medians and ratios only: these machines are shared and noisy.
import {spawnSync} from 'node:child_process'
import {join} from 'node:path'

const root = new URL('..', import.meta.url).pathname
const loops = process.env.BENCH_RANKS_LOOPS ?? '5000'
const args = [join(root, 'runtime-hooks/bench_ranks.py'), '--stub', join(root, 'test/py/stubs'), '--real', 'auto', '--loops', loops]
const ran = spawnSync('python3', args, {encoding: 'utf8'})
if (ran.status !== 0 && !ran.stdout) throw new Error(`bench_ranks.py failed (${ran.status}): ${ran.stderr}`)
const ranks = JSON.parse(ran.stdout)

const cell = (value, width = 8) => String(value ?? '').padStart(width)
const ratio = (withNs, withoutNs) => (withoutNs > 0 ? `x${(withNs / withoutNs).toFixed(2)}` : '')
console.log(`\nranks mapping (${ranks.machine}; ${ranks.rounds} rounds of ${ranks.loops} calls, median ns per call):`)
for (const [what, r] of Object.entries({'stand-in torch': ranks.stub, 'real torch': ranks.real})) {
  if (!r?.rows) {
    console.log(`  ${what}: skipped (${r?.skipped ?? r?.error ?? 'no result'})`)
    continue
  }
  const mode = r.rows[0].torchFunctionModeAddsNs !== undefined
  console.log(`  ${what} ${r.torch}, python ${r.pythonVersion}${r.mappingActive ? '' : ' (MAPPING NOT ACTIVE)'}`)
  console.log(
    `    ${'op'.padEnd(38)} ${cell('wrapped')} ${cell('original')} ${cell('adds')} ${cell('ratio', 6)}${mode ? ` ${cell('mode adds', 10)} ${cell('ratio', 6)}` : ''}`,
  )
  for (const row of r.rows) {
    const modeCells = mode ? ` ${cell(row.torchFunctionModeAddsNs, 10)} ${cell(ratio(row.torchFunctionModeNs, row.withoutNs), 6)}` : ''
    console.log(
      `    ${row.op.padEnd(38)} ${cell(row.withNs)} ${cell(row.withoutNs)} ${cell(row.mappingAddsNs)} ${cell(ratio(row.withNs, row.withoutNs), 6)}${modeCells}`,
    )
  }
}
console.log(JSON.stringify({ranksMapping: ranks}))
