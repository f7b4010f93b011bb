// Container part of npm run bench (only when a Docker engine answers and the e2e base image is there):
// time from `up` start to the first successful ssh login (median of 5, simulated H200), and the size of
// the layers docker/Dockerfile adds on top of its base (docker history).
import {execFileSync, spawnSync} from 'node:child_process'
import {mkdirSync, mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {median} from './bench-kit.mjs'

const BASE = process.env.BENCH_BASE_IMAGE ?? 'gpu-cosplay-test-base:bookworm'
const TAG = 'gpu-cosplay-bench:latest'
const RUNS = Number(process.env.BENCH_UP_RUNS ?? 5)
const root = new URL('..', import.meta.url).pathname
const cli = [join(root, 'bin/run.js')]

const docker = (...args) => spawnSync('docker', args, {encoding: 'utf8'})
if (docker('info').status !== 0) {
  console.log('container bench: skipped (no Docker engine answers)')
  process.exit(0)
}
if (docker('image', 'inspect', BASE).status !== 0) {
  console.log(`container bench: skipped (no ${BASE}; run test/e2e/setup-docker.sh)`)
  process.exit(0)
}

const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-bench-up-'))
mkdirSync('/var/tmp/gpu-cosplay-sim', {recursive: true})
const state = `/var/tmp/gpu-cosplay-sim/bench-${process.pid}.json` // where the stub runtime hook looks
const ws = join(dir, 'ws')
mkdirSync(ws)
const env = {...process.env, GPU_COSPLAY_SIM_STATE: state, GPU_COSPLAY_NVIDIA_SMI: join(root, 'test/sim/nvidia-smi'), GPU_COSPLAY_STATE_DIR: join(dir, 'state')}
const run = (args) => {
  const r = spawnSync(process.execPath, [...cli, ...args], {env, encoding: 'utf8'})
  if (r.status !== 0) throw new Error(`gpu-cosplay ${args.join(' ')} failed: ${r.stderr}${r.stdout}`)
  return r.stdout
}
try {
  execFileSync(env.GPU_COSPLAY_NVIDIA_SMI, ['--sim-init', '--model', 'h200', '--gpus', '1'], {env})
  run(['build', '--base', BASE, '--tag', TAG, '--json'])
  // Each up alone on the GPU: it turns MIG on and its down turns it off again (the first session of the day).
  const timeUps = (prefix) => {
    const times = []
    const loginMs = []
    for (let i = 0; i < RUNS; i++) {
      const start = process.hrtime.bigint()
      const up = JSON.parse(run(['up', '3090', '--name', `${prefix}-${i}`, '--image', TAG, '--workspace', ws, '--json']))
      times.push(Number(process.hrtime.bigint() - start) / 1e6)
      loginMs.push(up.container.sshLoginMs)
      run(['down', `${prefix}-${i}`, '--json'])
    }
    return {times, loginMs}
  }
  const {times, loginMs} = timeUps('bench')
  // The team scene: another session keeps MIG on, so each up only adds its slice.
  run(['up', 't4', '--no-container', '--name', 'bench-anchor', '--json'])
  const team = timeUps('bench-team')
  // What a --volume adds (its target resolved in the image through a probe container, beside the key and the GPU
  // read) and what --env adds (a docker exec as the session user once the container is ready), interleaved run by
  // run with a plain up, beside the same other session.
  const data = join(dir, 'data')
  mkdirSync(data)
  const variants = {plain: [], volume: ['--volume', `${data}:/data:ro`], env: ['--env', 'BENCH_VALUE=1']}
  const extra = Object.fromEntries(Object.keys(variants).map((k) => [k, []]))
  for (let i = 0; i < RUNS; i++) {
    for (const [variant, args] of Object.entries(variants)) {
      const name = `bench-${variant}-${i}`
      const start = process.hrtime.bigint()
      run(['up', '3090', '--name', name, '--image', TAG, '--workspace', ws, ...args, '--json'])
      extra[variant].push(Number(process.hrtime.bigint() - start) / 1e6)
      run(['down', name, '--json'])
    }
  }
  run(['down', 'bench-anchor', '--json'])

  const rows = (image) => docker('history', '--no-trunc', '--format', '{{.ID}}\t{{.Size}}\t{{.CreatedBy}}', image).stdout.trim().split('\n')
  const added = rows(TAG).slice(0, rows(TAG).length - rows(BASE).length)
  const sizeOf = (ref) => Number(docker('image', 'inspect', '-f', '{{.Size}}', ref).stdout.trim())
  const addedBytes = sizeOf(TAG) - sizeOf(BASE)

  console.log(
    `up -> first ssh login (process start to up's return, ${RUNS} runs), alone on the GPU (turns MIG on): median ${Math.round(median(times))} ms; inside up: median ${median(loginMs)} ms`,
  )
  console.log(
    `up -> first ssh login, beside another session (MIG already on): median ${Math.round(median(team.times))} ms; inside up: median ${median(team.loginMs)} ms`,
  )
  const medianOf = (variant) => Math.round(median(extra[variant]))
  console.log(
    `up -> first ssh login beside another session, interleaved: plain ${medianOf('plain')} ms, with --volume ${medianOf('volume')} ms (+${medianOf('volume') - medianOf('plain')}), with --env ${medianOf('env')} ms (+${medianOf('env') - medianOf('plain')})`,
  )
  console.log(`layers docker/Dockerfile adds on ${BASE}: ${(addedBytes / 1024 / 1024).toFixed(1)} MiB in ${added.length} layer(s)`)
  for (const r of added) {
    const [, size, createdBy] = r.split('\t')
    console.log(`  ${size.padStart(8)}  ${createdBy.replace(/\s+/g, ' ').slice(0, 90)}`)
  }
  console.log(
    JSON.stringify({
      upToSshMedianMs: Math.round(median(times)),
      upToSshSamplesMs: times.map(Math.round),
      upToSshBesideAnotherMedianMs: Math.round(median(team.times)),
      upToSshPlainVolumeEnvMedianMs: [medianOf('plain'), medianOf('volume'), medianOf('env')],
      addedLayerBytes: addedBytes,
    }),
  )
} finally {
  for (const i of Array.from({length: RUNS}, (_, k) => k)) {
    const names = ['bench', 'bench-team', 'bench-plain', 'bench-volume', 'bench-env'].map((p) => `gpu-cosplay-${p}-${i}`)
    docker('rm', '-f', ...names)
  }
  rmSync(dir, {recursive: true, force: true})
  for (const suffix of ['', '.lock', '.calls.log']) rmSync(state + suffix, {force: true})
}
