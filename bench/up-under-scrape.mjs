// node bench/up-under-scrape.mjs: does a scraper slow teammates down? `up --no-container` then `down` on a simulated
// H200, timed alone and while `gpu-cosplay metrics` is scraped every 100 ms, interleaved run by run. Medians and the
// ratio only: these machines are shared and noisy. BENCH_RUNS (default 9) pairs.
import {spawn, spawnSync, execFileSync} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {median} from './bench-kit.mjs'

const RUNS = Number(process.env.BENCH_RUNS ?? 9)
const root = new URL('..', import.meta.url).pathname
const bin = join(root, 'bin/run.js')
const sim = join(root, 'test/sim/nvidia-smi')
const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-scrape-'))
const env = {...process.env, GPU_COSPLAY_SIM_STATE: join(dir, 'sim.json'), GPU_COSPLAY_NVIDIA_SMI: sim, GPU_COSPLAY_STATE_DIR: join(dir, 'state')}
execFileSync(sim, ['--sim-init', '--model', 'h200', '--gpus', '1'], {env})

const cli = (args) => spawnSync(process.execPath, [bin, ...args], {env, encoding: 'utf8'})

function upDownMs() {
  const started = performance.now()
  const up = cli(['up', 't4', '--no-container', '--name', 'bench', '--json'])
  if (up.status !== 0) throw new Error(`up: ${up.stdout}${up.stderr}`)
  if (cli(['down', 'bench']).status !== 0) throw new Error('down failed')
  return performance.now() - started
}

// the metrics server, on a free port, and a scraper every 100 ms while `scraping` is on
const server = spawn(process.execPath, [bin, 'metrics', '--listen', '127.0.0.1:0'], {env, stdio: ['ignore', 'pipe', 'inherit']})
const url = await new Promise((resolve) => server.stdout.on('data', (d) => /(http:\/\/\S+)/.test(String(d)) && resolve(/(http:\/\/\S+)/.exec(String(d))[1])))
// the scraper is a process of its own: up and down run synchronously here and would starve a timer of ours
const SCRAPER = `let n = 0; setInterval(() => fetch(process.argv[1] + '/metrics').then((r) => r.text()).then(() => process.stdout.write('.')), 100)`
let scrapes = 0

async function scrapedUpDownMs() {
  const scraper = spawn(process.execPath, ['-e', SCRAPER, url], {stdio: ['ignore', 'pipe', 'ignore']})
  scraper.stdout.on('data', (d) => (scrapes += String(d).length))
  await new Promise((r) => setTimeout(r, 300)) // scraping before up starts
  const ms = upDownMs()
  scraper.kill('SIGTERM')
  return ms
}

const alone = []
const scraped = []
upDownMs() // warm up
for (let i = 0; i < RUNS; i++) {
  alone.push(upDownMs())
  scraped.push(await scrapedUpDownMs())
}
server.kill('SIGTERM')
rmSync(dir, {recursive: true, force: true})
console.log(
  `up + down, medians of ${RUNS}: alone ${median(alone).toFixed(0)} ms, while scraped every 100 ms ${median(scraped).toFixed(0)} ms (ratio ${(median(scraped) / median(alone)).toFixed(2)}; ${scrapes} scrapes)`,
)
