/**
 * `doctor`: what gpu-cosplay needs of this host, checked without changing anything (at most 3 nvidia-smi calls):
 * nvidia-smi and the driver, each GPU, Docker and the NVIDIA container runtime, nvidia-smi's rights, MPS, the state
 * directory and a shared box's installation.
 */
import {accessSync, constants, statSync} from 'node:fs'
import {homedir} from 'node:os'
import {dirname, resolve} from 'node:path'

import {matchHostModel} from '../catalog/resolve-target.js'
import type {Catalog, MigProfileBase} from '../catalog/types.js'
import {noneMissing, type ReadinessCheck} from '../core/check.js'
import type {CallContext} from '../core/call-context.js'
import {isCosplayError} from '../core/errors.js'
import type {RefusedFile} from '../core/json-file.js'
import {findExecutable} from '../core/find-executable.js'
import {LocalExecutor} from '../core/local-executor.js'
import {HOST_ENV} from '../core/names.js'
import type {StatePolicy} from '../core/state-policy.js'
import {checkSmiPrivileges, type SmiPrivileges} from '../host/privileges.js'
import {findMpsControl, mpsControlPathFrom} from '../host/mps.js'
import {probeHost} from '../host/probe.js'
import {smiPathFrom} from '../host/smi.js'
import type {HostGpu, HostProbe, MigAvailability} from '../host/types.js'
import {currentCatalog, localSmi} from './context.js'

export type DoctorMigProfile = MigProfileBase & MigAvailability

export type DoctorGpu = {
  readonly index: number
  readonly name: string
  readonly uuid: string
  /** the catalog host model nvidia-smi's name matched, or null when plan/up cannot use this GPU */
  readonly hostModel: string | null
  readonly migCapable: boolean
  readonly migEnabled: boolean
  /** a MIG mode change waits for a GPU reset */
  readonly migPending: boolean
  /** live: read with `mig -lgip` now; catalog: MIG is off, so the host model's table with every slice free; null: none */
  readonly migProfilesSource: 'live' | 'catalog' | null
  readonly migProfiles: readonly DoctorMigProfile[]
  /** watts */
  readonly power: {readonly min: number | null; readonly max: number | null; readonly default: number | null; readonly current: number | null}
  /** graphics clock range in MHz (min from the host model: nvidia-smi -q does not print it) */
  readonly clocks: {readonly min: number | null; readonly max: number | null}
}

export type DoctorResult = {
  /** false when some check is missing (the exit status is then 1) */
  readonly ok: boolean
  readonly nvidiaSmi: {readonly path: string | null; readonly driverVersion: string | null; readonly cudaVersion: string | null}
  readonly gpus: readonly DoctorGpu[]
  readonly checks: readonly ReadinessCheck[]
}

const DOCKER_TIMEOUT_MS = 2000
const RUNTIME_PROGRAMS = ['nvidia-container-runtime-hook', 'nvidia-ctk', 'nvidia-container-runtime']

/** Every check, and each GPU as plan and up would see it. */
export async function checkHost(call: CallContext): Promise<DoctorResult> {
  const smiPath = findExecutable(smiPathFrom(process.env), process.env)
  const [smi, docker, privileges] = await Promise.all([
    probeSmi(smiPath),
    checkDocker(),
    checkSmiPrivileges(new LocalExecutor(), smiPath ?? 'nvidia-smi', process.getuid?.() ?? null),
  ])
  const catalog = await currentCatalog()
  const gpus = smi.probe?.gpus.map((gpu) => doctorGpu(catalog, gpu)) ?? []
  const checks = [
    smi.check,
    ...gpus.map((gpu, i) => gpuCheck(gpu, smi.probe!.gpus[i])),
    docker,
    containerRuntimeCheck(process.env),
    privilegesCheck(privileges, smiPath ?? 'nvidia-smi'),
    mpsCheck(),
    await stateDirCheck(call.policy),
    await sharedBoxCheck(),
  ]
  return {
    ok: noneMissing(checks),
    nvidiaSmi: {path: smiPath, driverVersion: smi.probe?.driverVersion ?? null, cudaVersion: smi.probe?.cudaVersion ?? null},
    gpus,
    checks,
  }
}

/** Whether `system install` made this a shared box, and whether that still holds (system status has the details). */
async function sharedBoxCheck(): Promise<ReadinessCheck> {
  const name = 'shared box'
  const {boxStatus} = await import('../system/box-status.js')
  const box = await boxStatus(new LocalExecutor())
  if (!box.installed) {
    return {
      name,
      status: 'warn',
      detail: 'not installed: each user needs Docker and nvidia-smi rights of their own, which suits people who trust each other only',
      fix: ['for a shared box: sudo gpu-cosplay system install --yes'],
    }
  }
  const broken = box.checks.filter((c) => c.status === 'missing')
  if (broken.length > 0)
    return {name, status: 'missing', detail: broken.map((c) => `${c.name}: ${c.detail}`).join('; '), fix: ['sudo gpu-cosplay system status', ...broken[0].fix]}
  return {name, status: 'ok', detail: `installed: members of ${box.config!.group} use the engine (${box.config!.engine})`, fix: []}
}

/** Per-session shaping needs NVIDIA's MPS control binary; without it up falls back to GPU-wide knobs. */
function mpsCheck(): ReadinessCheck {
  const name = 'mps'
  const found = findMpsControl(process.env)
  if (found) return {name, status: 'ok', detail: `${found}: each session is shaped inside its own slice (SMs, hard VRAM cap)`, fix: []}
  return {
    name,
    status: 'warn',
    detail: `${mpsControlPathFrom(process.env)} not found: sessions on a slice fall back to the GPU-wide clock lock and power limit, which bind every tenant, and the VRAM cap holds for torch/JAX/CuPy only`,
    fix: ["install the driver's nvidia-cuda-mps-control (it ships with the NVIDIA driver utilities), or point GPU_COSPLAY_MPS_CONTROL at it"],
  }
}

/** Sessions of a team only see each other through a shared state directory. Reads only: creates nothing. */
async function stateDirCheck(trust: StatePolicy): Promise<ReadinessCheck> {
  const {findStateDir, SHARED_STATE_DIR} = await import('../apply/state-dir.js')
  const name = 'state directory'
  const dir = findStateDir(process.env, homedir())
  const fix = [`sudo mkdir -p ${SHARED_STATE_DIR} && sudo chmod 1777 ${SHARED_STATE_DIR}`]
  if (dir === null) {
    const wanted = process.env[HOST_ENV.stateDir] || SHARED_STATE_DIR
    if (canCreate(wanted) || !process.env[HOST_ENV.stateDir])
      return {name, status: 'ok', detail: `none yet: the first up creates ${wanted} (or a per-user one)`, fix: []}
    return {name, status: 'missing', detail: `${wanted} does not exist and cannot be created`, fix: [`set ${HOST_ENV.stateDir} to a folder you can write`]}
  }
  try {
    accessSync(dir.dir, constants.W_OK)
  } catch {
    return {name, status: 'missing', detail: `${dir.dir} is not writable for you`, fix}
  }
  const refused = await refusedStateFiles(dir.dir, trust)
  if (refused.length > 0) {
    return {
      name,
      status: 'warn',
      detail: `${dir.dir}: ${refused.map((f) => f.message).join('; ')}`,
      fix: refused.map((f) => `inspect and move it away: ls -la ${f.file}; mv ${f.file} ${f.file}.bad`),
    }
  }
  if (!dir.isShared) return {name, status: 'warn', detail: `${dir.dir} is yours alone: other users' sessions on these GPUs are not visible`, fix}
  return {name, status: 'ok', detail: `${dir.dir} (shared)`, fix: []}
}

/** Files named like a book or a name claim that every command skips rather than follow or trust (a planted symlink...). */
async function refusedStateFiles(stateDir: string, trust: StatePolicy): Promise<RefusedFile[]> {
  const [{scanBooks}, {scanClaims}] = await Promise.all([import('../apply/book-store.js'), import('../apply/session-names.js')])
  try {
    return [...scanBooks(stateDir, trust, {skipCorrupt: true}).refused, ...scanClaims(stateDir, trust).refused]
  } catch {
    return [] // an unreadable folder: the checks above say so
  }
}

/** Whether `dir` could be made: its nearest existing ancestor is a folder we can write to. */
function canCreate(dir: string): boolean {
  for (let at = resolve(dir); ; at = dirname(at)) {
    try {
      const info = statSync(at)
      if (!info.isDirectory()) return false
      accessSync(at, constants.W_OK)
      return true
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || at === dirname(at)) return false
    }
  }
}

async function probeSmi(smiPath: string | null): Promise<{probe: HostProbe | null; check: ReadinessCheck}> {
  const name = 'nvidia-smi'
  if (smiPath === null) {
    const where = process.env[HOST_ENV.nvidiaSmi] ? `${HOST_ENV.nvidiaSmi}=${process.env[HOST_ENV.nvidiaSmi]} is not an executable` : 'not found on PATH'
    return {
      probe: null,
      check: {
        name,
        status: 'missing',
        detail: where,
        fix: [
          'install the NVIDIA driver',
          `or point ${HOST_ENV.nvidiaSmi} at nvidia-smi`,
          'without a GPU, plan against a model: gpu-cosplay plan 3090 --on h200',
        ],
      },
    }
  }
  try {
    const probe = await probeHost(localSmi())
    const driver = `driver ${probe.driverVersion ?? 'unknown'}${probe.cudaVersion ? `, CUDA ${probe.cudaVersion}` : ''}`
    return {probe, check: {name, status: 'ok', detail: `${smiPath}, ${driver}, ${probe.gpus.length} GPU(s)`, fix: []}}
  } catch (error) {
    if (!isCosplayError(error)) throw error
    return {probe: null, check: {name, status: 'missing', detail: `${smiPath} found, but ${error.message} [${error.code}]`, fix: error.fix}}
  }
}

export function doctorGpu(catalog: Catalog, gpu: HostGpu): DoctorGpu {
  const model = gpu.name === '' ? null : matchHostModel(catalog, gpu.name)
  const migEnabled = gpu.migMode?.current === 'enabled'
  let migProfilesSource: DoctorGpu['migProfilesSource'] = null
  let migProfiles: DoctorMigProfile[] = []
  if (migEnabled && gpu.migProfiles !== null) {
    migProfilesSource = 'live'
    migProfiles = gpu.migProfiles.map(({name, id, smCount, memoryGiB, free, total}) => ({name, id, smCount, memoryGiB, free, total}))
  } else if (!migEnabled && gpu.migMode !== null && model?.mig) {
    migProfilesSource = 'catalog'
    migProfiles = model.mig.profiles.map(({name, id, smCount, memoryGiB, maxInstances}) => ({
      name,
      id,
      smCount,
      memoryGiB,
      free: maxInstances,
      total: maxInstances,
    }))
  }
  return {
    index: gpu.index,
    name: gpu.name,
    uuid: gpu.uuid,
    hostModel: model?.key ?? null,
    migCapable: gpu.migMode !== null,
    migEnabled,
    migPending: gpu.migMode !== null && gpu.migMode.pending !== gpu.migMode.current,
    migProfilesSource,
    migProfiles,
    power: {min: gpu.power.minW, max: gpu.power.maxW, default: gpu.power.defaultW, current: gpu.power.currentW},
    clocks: {min: model?.clockMinMHz ?? null, max: gpu.clocks.maxGraphicsMHz ?? model?.clockMaxMHz ?? null},
  }
}

function gpuCheck(gpu: DoctorGpu, probed: HostGpu): ReadinessCheck {
  const name = `gpu ${gpu.index}`
  const mig = !gpu.migCapable ? 'no MIG' : gpu.migEnabled ? 'MIG on' : 'MIG off'
  const base = `${gpu.name || '(name unreadable)'}, ${gpu.hostModel ? `host model ${gpu.hostModel}` : 'unknown host model'}, ${mig}`
  if (gpu.hostModel === null) {
    return {
      name,
      status: 'warn',
      detail: `${base}: plan and up cannot use it`,
      fix: ['describe it in a hosts: entry under $XDG_CONFIG_HOME/gpu-cosplay/catalog.d/', 'or plan against a known model: --on h200'],
    }
  }
  if (gpu.migPending) {
    const to = probed.migMode?.pending === 'enabled' ? 'on' : 'off'
    return {
      name,
      status: 'warn',
      detail: `${base}; turning MIG ${to} waits for a GPU reset`,
      fix: [`reset the GPU while it is idle (nvidia-smi -i ${gpu.index} -r), or reboot`],
    }
  }
  if (gpu.migCapable && !gpu.migEnabled && probed.processes.length > 0) {
    // up (and plan) refuse: MIG mode can only be turned on on an idle GPU
    const pids = probed.processes.map((p) => p.pid).join(', ')
    return {
      name,
      status: 'warn',
      detail: `${base}; ${probed.processes.length} process(es) use it (pid ${pids}), so MIG cannot be turned on: up refuses this GPU until it is idle`,
      fix: ['stop those processes, or use another GPU: --host-gpu N'],
    }
  }
  if (probed.unavailable.length > 0) {
    return {name, status: 'warn', detail: `${base}; could not read ${probed.unavailable.join(', ')}`, fix: ['run doctor as root for complete readings']}
  }
  const free =
    gpu.migProfilesSource === 'live' ? `, ${gpu.migProfiles.filter((p) => p.free > 0).length} of ${gpu.migProfiles.length} profiles have a free slot` : ''
  return {name, status: 'ok', detail: `${base}${free}`, fix: []}
}

async function checkDocker(): Promise<ReadinessCheck> {
  const name = 'docker'
  let runtime: typeof import('../container/runtime.js')
  try {
    runtime = await import('../container/runtime.js')
  } catch (error) {
    return {name, status: 'warn', detail: `not checked: the Docker client could not be loaded (${(error as Error).message.split('\n')[0]})`, fix: []}
  }
  if (typeof runtime.DockerRuntime?.prototype?.ping !== 'function') {
    return {name, status: 'warn', detail: 'not checked: this build has no Docker ping', fix: []}
  }
  const docker = new runtime.DockerRuntime({dockerOptions: {timeout: DOCKER_TIMEOUT_MS}})
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<'timeout'>((resolveTimeout) => {
    timer = setTimeout(() => resolveTimeout('timeout'), DOCKER_TIMEOUT_MS)
    timer.unref()
  })
  const where = process.env[HOST_ENV.dockerHost] ?? 'the default socket'
  try {
    const answer = await Promise.race([docker.ping().then(() => 'ok' as const), timeout])
    if (answer === 'timeout') {
      return {
        name,
        status: 'missing',
        detail: `the Docker engine at ${where} did not answer within ${DOCKER_TIMEOUT_MS} ms`,
        fix: ['check that dockerd runs: docker info'],
      }
    }
    return {name, status: 'ok', detail: `the engine at ${where} answers`, fix: []}
  } catch (error) {
    if (!isCosplayError(error)) throw error
    return {name, status: 'missing', detail: error.message, fix: error.fix}
  } finally {
    clearTimeout(timer)
  }
}

function containerRuntimeCheck(env: Readonly<Record<string, string | undefined>>): ReadinessCheck {
  const name = 'nvidia container runtime'
  for (const program of RUNTIME_PROGRAMS) {
    const path = findExecutable(program, env)
    if (path !== null) return {name, status: 'ok', detail: `${program} at ${path}`, fix: []}
  }
  return {
    name,
    status: 'missing',
    detail: `none of ${RUNTIME_PROGRAMS.join(', ')} is on PATH, so containers cannot be given a GPU`,
    fix: ['install the NVIDIA Container Toolkit (nvidia-container-toolkit), then restart dockerd'],
  }
}

/** `up` and `down` use passwordless sudo by themselves when they are not root (apply-context), so there is nothing to switch on. */
export function privilegesCheck(privileges: SmiPrivileges, smiPath: string): ReadinessCheck {
  const name = 'privileges'
  if (privileges.mode === 'root') return {name, status: 'ok', detail: `${privileges.detail}: nvidia-smi may change MIG, clocks and power`, fix: []}
  if (privileges.mode === 'sudo') return {name, status: 'ok', detail: `${privileges.detail}: changes go through sudo -n`, fix: []}
  return {
    name,
    status: 'missing',
    detail: `${privileges.detail}; up and down must change MIG, clocks and power`,
    fix: ['run gpu-cosplay as root', `or allow nvidia-smi without a password (a sudoers line: $USER ALL=(root) NOPASSWD: ${smiPath})`],
  }
}
