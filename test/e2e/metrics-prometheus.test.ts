/**
 * Debian's Prometheus scrapes `gpu-cosplay metrics` (run by the test user, as on a box where a member starts it):
 * the target is up, a session brought up shows with the values `up --json` printed, and after `down` its series go
 * stale (Prometheus stops returning them). Skipped without the `prometheus` binary (run.sh's setup installs it).
 */
import {afterAll, beforeAll, expect, it, jest} from '@jest/globals'
import {spawn, spawnSync, type ChildProcess} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:net'
import {join} from 'node:path'

import {waitFor, World} from './support.js'

jest.setTimeout(180_000)

const hasPrometheus = spawnSync('prometheus', ['--version']).status === 0
const maybe = hasPrometheus ? it : it.skip

let world: World
let metrics: ReturnType<World['start']> | undefined
let prometheus: ChildProcess | undefined
let promDir: string

beforeAll(() => {
  world = new World()
  promDir = mkdtempSync('/tmp/gpu-cosplay-prom-')
})

afterAll(() => {
  metrics?.kill()
  prometheus?.kill('SIGKILL')
  rmSync(promDir, {recursive: true, force: true})
  world.cleanup()
})

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const {port} = server.address() as {port: number}
      server.close(() => resolve(port))
    })
  })
}

type Sample = {metric: Record<string, string>; value: [number, string]}

async function query(api: string, promql: string): Promise<Sample[]> {
  const response = await fetch(`${api}/api/v1/query?query=${encodeURIComponent(promql)}`)
  const body = (await response.json()) as {status: string; data: {result: Sample[]}}
  expect(body.status).toBe('success')
  return body.data.result
}

/** polls a PromQL query until `test` accepts its result */
async function until(api: string, promql: string, test: (samples: Sample[]) => boolean, timeoutMs = 60_000): Promise<Sample[]> {
  const deadline = Date.now() + timeoutMs
  let last: Sample[] = []
  while (Date.now() < deadline) {
    last = await query(api, promql).catch(() => [])
    if (test(last)) return last
    await new Promise((r) => setTimeout(r, 500))
  }
  throw new Error(`${promql} never gave what was expected; last: ${JSON.stringify(last)}`)
}

maybe('Prometheus scrapes the sessions up --json made, and forgets one after down', async () => {
  const name = `${world.id}-p`
  const up = world.json(['up', 't4', '--no-container', '--name', name])
  expect(up.exitCode).toBe(0)

  metrics = world.start(['metrics', '--listen', '127.0.0.1:0'])
  await waitFor(() => /serving metrics on http:\/\/127\.0\.0\.1:\d+\/metrics/.test(metrics!.output()), 20_000)
  const target = /http:\/\/(127\.0\.0\.1:\d+)\/metrics/.exec(metrics.output())![1]

  const promPort = await freePort()
  const config = join(promDir, 'prometheus.yml')
  writeFileSync(config, `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: gpu-cosplay\n    static_configs:\n      - targets: ['${target}']\n`)
  expect(spawnSync('promtool', ['check', 'config', config], {encoding: 'utf8'}).status).toBe(0)
  prometheus = spawn(
    'prometheus',
    [`--config.file=${config}`, `--storage.tsdb.path=${join(promDir, 'data')}`, `--web.listen-address=127.0.0.1:${promPort}`, '--log.level=warn'],
    {stdio: 'ignore'},
  )
  const api = `http://127.0.0.1:${promPort}`

  await until(api, 'up{job="gpu-cosplay"}', (s) => s.length === 1 && s[0].value[1] === '1')
  const plan = up.json.plan
  const sms = await until(api, `gpu_cosplay_session_sms{session="${name}"}`, (s) => s.length === 1)
  expect(Number(sms[0].value[1])).toBe(plan.smCount)
  const info = await query(api, `gpu_cosplay_session_info{session="${name}"}`)
  expect(info[0].metric).toMatchObject({owner: 'cosplayer', target: 't4', gpu: '0', slice: up.json.mig.profile})
  const limit = await query(api, `gpu_cosplay_session_memory_limit_bytes{session="${name}"}`)
  // the limit the driver enforces (MPS pinned limit, else the MIG slice), the costume's cap where there is none
  expect(Number(limit[0].value[1])).toBe((plan.memory?.hardLimitMiB ?? plan.vramCapMiB) * 1024 * 1024)
  const fp32 = await query(api, `gpu_cosplay_session_expected{session="${name}",axis="fp32_flops"}`)
  expect(Number(fp32[0].value[1])).toBe(Math.round(plan.expected.fp32Tflops * 1e12))
  expect(Number((await query(api, 'gpu_cosplay_gpu_sessions{gpu="0"}'))[0].value[1])).toBe(1)

  expect(world.json(['down', name]).exitCode).toBe(0)
  // the next scrape lacks the series: Prometheus marks them stale and returns nothing for them
  await until(api, `gpu_cosplay_session_sms{session="${name}"}`, (s) => s.length === 0)
  await until(api, 'gpu_cosplay_gpu_sessions{gpu="0"}', (s) => s.length === 1 && s[0].value[1] === '0')
})
