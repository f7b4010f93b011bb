import {afterAll, afterEach, expect, it, jest} from '@jest/globals'

import {spawn} from 'node:child_process'
import {userInfo} from 'node:os'

import {BIN, cleanupTemps, type Env, runCli, runJson, Sim} from './support/run-cli.js'

jest.setTimeout(90_000)
afterAll(cleanupTemps)

const MiB = 1024 * 1024

type Server = {readonly url: Promise<string>; readonly done: Promise<number | null>; kill(signal: NodeJS.Signals): void}
let server: Server | undefined
afterEach(() => server?.kill('SIGKILL'))

/** `metrics` on a free loopback port (port 0); its URL once it says it serves */
function startMetrics(env: Env): Server {
  const child = spawn(process.execPath, [BIN, 'metrics', '--listen', '127.0.0.1:0'], {env: env as NodeJS.ProcessEnv, stdio: ['ignore', 'pipe', 'pipe']})
  let out = ''
  const url = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (d) => {
      out += d
      const match = /serving metrics on (http:\S+)/.exec(out)
      if (match) resolve(match[1])
    })
    child.stderr.on('data', (d) => (out += d))
    child.on('close', () => reject(new Error(`metrics ended before it served: ${out}`)))
  })
  url.catch(() => undefined)
  const done = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
  server = {url, done, kill: (signal) => child.kill(signal)}
  return server
}

/** series -> value, from the text exposition; the key is the line's name and labels as printed */
function parse(text: string): Map<string, number> {
  const series = new Map<string, number>()
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue
    const at = line.lastIndexOf(' ')
    series.set(line.slice(0, at), Number(line.slice(at + 1)))
  }
  return series
}

async function scrape(url: string): Promise<Map<string, number>> {
  const response = await fetch(url)
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/)
  return parse(await response.text())
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

it('serves the sessions `up --json` made, per GPU what is left, one read for two scrapers, and forgets a session after `down`', async () => {
  const sim = Sim.create('h200', 1)
  const env = sim.env()
  // m1 ends by itself in an hour (issue 20's TTL), m2 never
  const ups = ['t4', 'a10'].map((target, i) => runJson(['up', target, '--no-container', '--name', `m${i + 1}`, ...(i === 0 ? ['--ttl', '1h'] : [])], env))
  for (const up of ups) expect(up.exitCode).toBe(0)

  const metrics = startMetrics(env)
  const url = await metrics.url
  expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/)

  const m = await scrape(url)
  for (const {json: up} of ups) {
    const session = up.name
    const plan = up.plan
    expect(
      m.get(`gpu_cosplay_session_info{session="${session}",owner="${userInfo().username}",target="${up.target.key}",gpu="0",slice="${up.mig.profile}"}`),
    ).toBe(1)
    expect(m.get(`gpu_cosplay_session_sms{session="${session}"}`)).toBe(plan.smCount)
    // the limit the driver holds the session to: its MPS pinned limit, else its MIG slice
    expect(m.get(`gpu_cosplay_session_memory_limit_bytes{session="${session}"}`)).toBe(plan.memory.hardLimitMiB * MiB)
    expect(plan.memory.hardLimitMiB).toBe(plan.mps ? plan.mps.pinnedMemLimitMiB : Math.round(plan.mig.memoryGiB * 1024))
    expect(m.get(`gpu_cosplay_session_memory_used_bytes{session="${session}"}`)).toBe(0)
    expect(m.get(`gpu_cosplay_session_expected{session="${session}",axis="fp32_flops"}`)).toBe(Math.round(plan.expected.fp32Tflops * 1e12))
    expect(m.get(`gpu_cosplay_session_expected{session="${session}",axis="bandwidth_bytes_per_second"}`)).toBe(Math.round(plan.expected.bandwidthGBs * 1e9))
    expect(m.get(`gpu_cosplay_session_target{session="${session}",axis="fp32_flops"}`)).toBe(Math.round(plan.target.fp32Tflops * 1e12))
    // nothing of the session's environment in a label or a name
    for (const value of Object.values(up.env as Record<string, string>)) if (value.length > 8) expect([...m.keys()].join('\n')).not.toContain(value)
  }
  // the T4 has no BF16: no target series for it
  expect(m.has(`gpu_cosplay_session_target{session="m1",axis="bf16_flops"}`)).toBe(false)
  expect(m.get(`gpu_cosplay_session_time_left_seconds{session="m1",owner="${ups[0].json.owner ?? m1Owner(m)}"}`)).toBeGreaterThan(3500)
  expect([...m.keys()].some((k) => k.startsWith('gpu_cosplay_session_time_left_seconds{session="m2"'))).toBe(false)
  expect([...m.keys()].filter((k) => k.startsWith('gpu_cosplay_session_idle_seconds{')).length).toBe(2)
  expect(m.get('gpu_cosplay_queue_waiting')).toBe(0)
  expect(m.get(`gpu_cosplay_gpu_sessions{gpu="0"}`)).toBe(2)
  expect(m.get(`gpu_cosplay_gpu_mig_enabled{gpu="0"}`)).toBe(1)
  expect(m.get(`gpu_cosplay_gpu_memory_slices_free{gpu="0"}`)).toBe(8 - 1 - 2)
  expect(m.get(`gpu_cosplay_gpu_power_limit_watts{gpu="0"}`)).toBe(sim.state().gpus[0].power_limit)
  expect(m.get('gpu_cosplay_gpus_read')).toBe(1)

  // two scrapers at once cost one read of the GPU
  await sleep(1100)
  sim.clearCalls()
  await Promise.all([scrape(url), scrape(url)])
  expect(sim.calls().filter((c) => c.argv.includes('-q'))).toHaveLength(1)
  expect(sim.calls().filter((c) => /(^| )(-mig|-cgi|-dgi|-lgc|-pl|-pm)( |$)/.test(c.argv.join(' ')))).toEqual([])

  expect(runJson(['down', 'm1'], env).exitCode).toBe(0)
  await sleep(1100)
  const after = await scrape(url)
  expect([...after.keys()].filter((k) => k.includes('session="m1"'))).toEqual([])
  expect(after.get(`gpu_cosplay_session_sms{session="m2"}`)).toBe(ups[1].json.plan.smCount)
  expect(after.get(`gpu_cosplay_gpu_sessions{gpu="0"}`)).toBe(1)

  expect(runJson(['down', 'm2'], env).exitCode).toBe(0)
  await sleep(1100)
  const none = await scrape(url)
  expect([...none.keys()].filter((k) => k.startsWith('gpu_cosplay_session'))).toEqual([])
  expect(none.get(`gpu_cosplay_gpu_sessions{gpu="0"}`)).toBe(0)
  expect(none.get(`gpu_cosplay_gpu_mig_enabled{gpu="0"}`)).toBe(0)
  expect(none.has(`gpu_cosplay_gpu_memory_slices_free{gpu="0"}`)).toBe(false)

  expect((await fetch(url.replace('/metrics', '/nope'))).status).toBe(404)
  metrics.kill('SIGTERM')
  expect(await metrics.done).toBe(0)
})

it('a GPU without MIG: slice "full", the clock the session locked in hertz, no MIG series; unlocked after down', async () => {
  const sim = Sim.create('l40s', 1)
  const env = sim.env()
  const up = runJson(['up', 't4', '--no-container', '--name', 'whole'], env)
  expect(up.exitCode).toBe(0)
  expect(up.json.gpuWide.clockLock).toBe(true)
  const url = await startMetrics(env).url
  const m = await scrape(url)
  expect(m.get(`gpu_cosplay_session_info{session="whole",owner="${userInfo().username}",target="t4",gpu="0",slice="full"}`)).toBe(1)
  expect(m.get('gpu_cosplay_gpu_clock_locked_hertz{gpu="0"}')).toBe(up.json.clockMHz * 1e6)
  expect(m.has('gpu_cosplay_gpu_mig_enabled{gpu="0"}')).toBe(false)
  expect(m.has('gpu_cosplay_gpu_memory_slices_free{gpu="0"}')).toBe(false)
  expect(m.has('gpu_cosplay_session_memory_used_bytes{session="whole"}')).toBe(false)
  expect(runJson(['down', 'whole'], env).exitCode).toBe(0)
  await sleep(1100)
  expect((await scrape(url)).has('gpu_cosplay_gpu_clock_locked_hertz{gpu="0"}')).toBe(false)
})

it('--listen that is not ADDRESS:PORT is bad input (exit 2)', () => {
  const result = runCli(['metrics', '--listen', 'nonsense'])
  expect(result.exitCode).toBe(2)
})

/** the owner label of m1, as session_info carries it */
function m1Owner(m: Map<string, number>): string {
  const key = [...m.keys()].find((k) => k.startsWith('gpu_cosplay_session_info{session="m1"'))!
  return /owner="([^"]*)"/.exec(key)![1]
}
