// Part of npm run bench, on a machine where root runs it with a Docker engine, the e2e base image and no shared box
// of its own: what the engine boundary costs. A shared box is set up for the bench (the package as npm pack makes it,
// installed root-owned under its own prefix, then `system install`, one member outside the docker group), and `up`
// to the first ssh login is timed for the member (their CLI, sudo, the engine) and for root at the same box's shell,
// alternately, against the simulated H200. Medians and their ratio; everything is removed afterwards.
import {execFileSync, spawnSync} from 'node:child_process'
import {chownSync, copyFileSync, existsSync, mkdirSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {median} from './bench-kit.mjs'

const BASE = process.env.BENCH_BASE_IMAGE ?? 'gpu-cosplay-test-base:bookworm'
const RUNS = Number(process.env.BENCH_UP_RUNS ?? 5)
const root = new URL('..', import.meta.url).pathname
const PREFIX = '/opt/gpu-cosplay-bench'
const PROGRAMS = '/opt/gpu-cosplay-bench-sim'
const STATE = '/var/lib/gpu-cosplay-bench'
const GROUP = 'gpu-cosplay-bench'
const MEMBER = {user: 'gcbench', uid: 1311}
const SIM_STATE = join(PROGRAMS, 'state', 'state.json')
const HOOK_LINK = `/var/tmp/gpu-cosplay-sim/bench-member-${process.pid}.json`

const skip = (why) => {
  console.log(`member up bench: skipped (${why})`)
  process.exit(0)
}
if (process.getuid?.() !== 0) skip('it installs a shared box: run npm run bench as root')
if (existsSync('/etc/gpu-cosplay/config.yaml')) skip('this machine has a shared box of its own')
if (spawnSync('docker', ['info']).status !== 0) skip('no Docker engine answers')
if (spawnSync('docker', ['image', 'inspect', BASE]).status !== 0) skip(`no ${BASE}; run test/e2e/setup-docker.sh`)

const must = (argv, options = {}) => {
  const r = spawnSync(argv[0], argv.slice(1), {encoding: 'utf8', ...options})
  if (r.status !== 0) throw new Error(`${argv.join(' ')}: exit ${r.status}\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}
const CLI = join(PREFIX, 'bin', 'gpu-cosplay')
const rootEnv = {PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', NO_COLOR: '1'}
const home = `/home/${MEMBER.user}`
const asRoot = (args) => must([CLI, ...args], {env: rootEnv})
const asMember = (args) =>
  must(
    ['runuser', '-u', MEMBER.user, '--', 'env', '-i', `HOME=${home}`, `USER=${MEMBER.user}`, 'PATH=/usr/local/bin:/usr/bin:/bin', 'NO_COLOR=1', CLI, ...args],
    {
      cwd: home,
    },
  )

try {
  const pack = must(['npm', 'pack', '--silent', '--pack-destination', '/tmp'], {cwd: root}).trim().split('\n').pop()
  rmSync(PREFIX, {recursive: true, force: true})
  must(['npm', 'install', '-g', '--prefix', PREFIX, '--prefer-offline', '--no-audit', '--no-fund', join('/tmp', pack)])
  rmSync(PROGRAMS, {recursive: true, force: true})
  mkdirSync(join(PROGRAMS, 'state'), {recursive: true, mode: 0o755})
  for (const [from, to] of [
    ['test/sim/nvidia-smi', 'nvidia-smi-sim'],
    ['test/sim/nvidia_smi_sim.py', 'nvidia_smi_sim.py'],
    ['test/sim/nvidia-cuda-mps-control', 'mps-sim'],
  ])
    copyFileSync(join(root, from), join(PROGRAMS, to))
  const wrapper = (program) => `#!/bin/sh\nGPU_COSPLAY_SIM_STATE=${SIM_STATE} exec /usr/bin/python3 ${join(PROGRAMS, program)} "$@"\n`
  writeFileSync(join(PROGRAMS, 'nvidia-smi'), wrapper('nvidia-smi-sim'), {mode: 0o755})
  writeFileSync(join(PROGRAMS, 'nvidia-cuda-mps-control'), wrapper('mps-sim'), {mode: 0o755})
  must([join(PROGRAMS, 'nvidia-smi'), '--sim-init', '--model', 'h200', '--gpus', '1'])
  mkdirSync('/var/tmp/gpu-cosplay-sim', {recursive: true})
  rmSync(HOOK_LINK, {force: true})
  execFileSync('ln', ['-s', SIM_STATE, HOOK_LINK])
  spawnSync('userdel', ['-r', MEMBER.user])
  must(['useradd', '--create-home', '--uid', String(MEMBER.uid), '--user-group', '--shell', '/bin/bash', MEMBER.user])
  mkdirSync(join(home, 'ws'))
  chownSync(join(home, 'ws'), MEMBER.uid, MEMBER.uid)
  rmSync(STATE, {recursive: true, force: true})
  const smi = join(PROGRAMS, 'nvidia-smi')
  const mps = join(PROGRAMS, 'nvidia-cuda-mps-control')
  asRoot(['system', 'install', '--group', GROUP, '--state-dir', STATE, '--nvidia-smi', smi, '--mps-control', mps, '--yes', '--json'])
  must(['usermod', '-aG', GROUP, MEMBER.user])
  asRoot(['build', '--base', BASE, '--json'])

  const timeUp = (who, i) => {
    const name = `bench-${who}-${i}`
    const args = ['up', '3090', '--name', name, '--workspace', join(home, 'ws'), '--json']
    const start = process.hrtime.bigint()
    const up = JSON.parse(who === 'member' ? asMember(args) : asRoot(args))
    const ms = Number(process.hrtime.bigint() - start) / 1e6
    if (up.container?.sshLoginMs == null) throw new Error(`${who}'s up reached no ssh login`)
    ;(who === 'member' ? asMember : asRoot)(['down', name, '--json'])
    return ms
  }
  // a warm-up of each, then alternating (the order flipped every round): both see the same machine
  timeUp('member', 'warm')
  timeUp('root', 'warm')
  const times = {member: [], root: []}
  for (let i = 0; i < RUNS; i++) {
    for (const who of i % 2 === 0 ? ['member', 'root'] : ['root', 'member']) times[who].push(timeUp(who, i))
  }
  const m = median(times.member)
  const r = median(times.root)
  console.log(
    `up -> first ssh login on a shared box (${RUNS} runs each, alternating): member (CLI, sudo, engine) median ${Math.round(m)} ms, root at the box's shell median ${Math.round(r)} ms: x${(m / r).toFixed(3)}`,
  )
  console.log(JSON.stringify({memberUpMedianMs: Math.round(m), rootUpMedianMs: Math.round(r), memberOverRoot: Number((m / r).toFixed(3)), samples: times}))
} finally {
  spawnSync(CLI, ['down', '--all'], {env: rootEnv})
  spawnSync(CLI, ['system', 'uninstall', '--yes'], {env: rootEnv})
  spawnSync('userdel', ['-r', MEMBER.user])
  spawnSync('groupdel', [GROUP])
  for (const dir of [PREFIX, PROGRAMS, STATE, HOOK_LINK]) rmSync(dir, {recursive: true, force: true})
}
