/**
 * Helpers for the Docker end-to-end tests. Jest runs as root (run.sh); every CLI call runs as the non-root
 * test user `cosplayer` (uid 1234, in the docker group), as a user would, through `runuser`. GPU changes go
 * through passwordless sudo for exactly the simulator's path (run.sh writes that sudoers rule, keeping
 * GPU_COSPLAY_SIM_STATE), so the CLI takes its real sudo path, and the simulator refuses non-root mutations.
 */
import {spawn, spawnSync} from 'node:child_process'
import {chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

export const ROOT = process.cwd()
export const BIN = join(ROOT, 'bin', 'run.js')
export const SIM_BIN = join(ROOT, 'test', 'sim', 'nvidia-smi')
/** the simulator's program, which SIM_BIN imports from its own folder: copy it beside SIM_BIN */
export const SIM_MODULE = join(ROOT, 'test', 'sim', 'nvidia_smi_sim.py')
export const MPS_SIM_BIN = join(ROOT, 'test', 'sim', 'nvidia-cuda-mps-control')
export const USER = 'cosplayer'
export const UID = 1234
/** the teammate (setup-docker.sh makes both; run.sh gives both the same sudoers rule) */
export const USER2 = 'cosplayer2'
export const UID2 = 1235
export const BASE_IMAGE = 'gpu-cosplay-test-base:bookworm'
export const NO_SSHD_IMAGE = 'gpu-cosplay-test-nosshd:bookworm'
/** where the stub runtime hook looks for simulator state (setup-docker.sh makes it, mode 1777) */
export const SIM_DIR = '/var/tmp/gpu-cosplay-sim'

export type Result = {exitCode: number | null; stdout: string; stderr: string}

/** One test's world: simulated H200, state dir and workspace owned by the test user. */
export class World {
  readonly id: string
  readonly home: string
  readonly workspace: string
  readonly stateDir: string
  readonly simState: string

  constructor() {
    this.id = `e2e${process.pid}x${Math.random().toString(36).slice(2, 8)}`
    this.home = mkdtempSync('/tmp/gpu-cosplay-e2e-')
    chmodSync(this.home, 0o755)
    this.workspace = join(this.home, 'ws')
    this.stateDir = join(this.home, 'state')
    for (const dir of [this.workspace, this.stateDir]) {
      mkdirSync(dir)
      chownSync(dir, UID, UID)
    }
    // The simulator replaces its state file on reads too, as whichever user runs it (cosplayer for reads,
    // root through sudo for changes): keep it in a folder of the test user's, not in the sticky shared one,
    // and show it to the stub runtime hook through a link there.
    const simDir = join(this.home, 'sim')
    mkdirSync(simDir)
    chownSync(simDir, UID, UID)
    this.simState = join(simDir, 'state.json')
    this.smi(['--sim-init', '--model', 'h200', '--gpus', '1'])
    symlinkSync(this.simState, join(SIM_DIR, `${this.id}.json`))
    this.smi(['--sim-set', 'require_root=true'])
    // the test user reads without sudo: the simulator's lock and call log must be writable for them
    for (const file of [`${this.simState}.lock`, `${this.simState}.calls.log`]) {
      writeFileSync(file, '', {flag: 'a'})
      chmodSync(file, 0o666)
    }
    chmodSync(this.simState, 0o644)
  }

  /** the user every CLI call runs as */
  user = USER

  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: `/home/${this.user}`,
      USER: this.user,
      LOGNAME: this.user,
      GPU_COSPLAY_STATE_DIR: this.stateDir,
      GPU_COSPLAY_NVIDIA_SMI: SIM_BIN,
      GPU_COSPLAY_SIM_STATE: this.simState,
      // the host has MPS (the stand-in), as a real driver install does: sessions are shaped with it
      GPU_COSPLAY_MPS_CONTROL: MPS_SIM_BIN,
      NO_COLOR: '1',
      ...extra,
    }
  }

  /** argv for running the CLI as the test user */
  argv(args: readonly string[], extra: Record<string, string> = {}): string[] {
    const env = Object.entries(this.env(extra)).map(([k, v]) => `${k}=${v}`)
    return ['-u', this.user, '--', 'env', '-i', ...env, process.execPath, BIN, ...args]
  }

  /** the same world (GPU, state directory, workspace) seen by another user: CLI calls run as them */
  as(user: string): World {
    return Object.assign(Object.create(Object.getPrototypeOf(this)) as World, this, {user})
  }

  cli(args: readonly string[], extra: Record<string, string> = {}, timeoutMs = 120_000): Result {
    const r = spawnSync('runuser', this.argv(args, extra), {cwd: this.workspace, encoding: 'utf8', timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe']})
    if (r.error) throw r.error
    return {exitCode: r.status, stdout: r.stdout, stderr: r.stderr}
  }

  json<T = any>(args: readonly string[], extra: Record<string, string> = {}): Result & {json: T} {
    const r = this.cli([...args, '--json'], extra)
    try {
      return {...r, json: JSON.parse(r.stdout) as T}
    } catch {
      throw new Error(`gpu-cosplay ${args.join(' ')} --json: no JSON (exit ${r.exitCode})\n${r.stdout}\n${r.stderr}`)
    }
  }

  /** the CLI in the background, in its own process group (kill -9 takes runuser and node together) */
  start(args: readonly string[], extra: Record<string, string> = {}) {
    const child = spawn('runuser', this.argv(args, extra), {cwd: this.workspace, detached: true, stdio: ['ignore', 'pipe', 'pipe']})
    let output = ''
    child.stdout.on('data', (d) => (output += d))
    child.stderr.on('data', (d) => (output += d))
    const done = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)))
    return {done, output: () => output, kill: () => process.kill(-child.pid!, 'SIGKILL')}
  }

  smi(args: readonly string[]): string {
    const r = spawnSync(SIM_BIN, args, {env: {...process.env, GPU_COSPLAY_SIM_STATE: this.simState}, encoding: 'utf8'})
    if (r.status !== 0) throw new Error(`sim ${args.join(' ')}: ${r.stderr}`)
    return r.stdout
  }

  /** what `down`/`recover` must put back */
  gpuState(): unknown {
    const g = JSON.parse(this.smi(['--sim-dump'])).gpus[0]
    return {persistence: g.persistence, mig: [g.mig_current, g.mig_pending], powerLimitW: g.power_limit, clocks: g.clocks_locked, gis: g.gis ?? []}
  }

  /** every nvidia-smi call so far, in order, as one string each */
  calls(): string[] {
    return readFileSync(`${this.simState}.calls.log`, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l).argv as string[]).join(' '))
  }

  mutatingCalls(): string[] {
    return this.calls().filter((a) => /(^| )(-mig|-cgi|-cci|-dci|-dgi|-lgc|-rgc|-pl|-pm)( |$)/.test(a))
  }

  /** the kinds of a session's journal entries, in the order they were made */
  journalKinds(session: string): string[] {
    const dir = join(this.stateDir, 'gpus')
    for (const f of readdirSafe(dir).filter((n) => n.endsWith('.json'))) {
      const book = JSON.parse(readFileSync(join(dir, f), 'utf8'))
      if (book.sessions[session]) return (book.sessions[session].journal as {kind: string}[]).map((e) => e.kind)
    }
    throw new Error(`no session ${session} in ${dir}`)
  }

  /** sessions and leases left in the state directory's books */
  leftovers(): {sessions: string[]; leases: string[]} {
    const dir = join(this.stateDir, 'gpus')
    const books = readdirSafe(dir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')))
    return {sessions: books.flatMap((b) => Object.keys(b.sessions)), leases: books.flatMap((b) => Object.keys(b.leases))}
  }

  cleanup(): void {
    removeContainers(this.id)
    rmSync(this.home, {recursive: true, force: true})
    for (const f of readdirSafe(SIM_DIR)) if (f.startsWith(this.id)) rmSync(join(SIM_DIR, f), {force: true})
  }
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

export function docker(args: readonly string[], input?: string): string
export function docker(args: readonly string[], input: string | undefined, options: {allowFail: true}): string | null
/** The docker CLI's stdout; a failure throws, or with allowFail gives null. */
export function docker(args: readonly string[], input?: string, options: {allowFail?: boolean} = {}): string | null {
  const r = spawnSync('docker', args, {encoding: 'utf8', input})
  if (r.status === 0) return r.stdout
  if (options.allowFail) return null
  throw new Error(`docker ${args.join(' ')}: ${r.stderr}`)
}

/** package.json's version: the default image's tag */
/** The default cosplay image built from this tree's docker/ on the test base (gpu-cosplay build, as the test user). */
export function buildDefaultImage(): void {
  const builder = new World()
  try {
    const built = builder.json(['build', '--base', BASE_IMAGE])
    if (built.exitCode !== 0) throw new Error(`build: ${built.stdout}${built.stderr}`)
  } finally {
    builder.cleanup()
  }
}

export function version(): string {
  return (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {version: string}).version
}

/** containers whose session label starts with the world's id */
export function containersOf(id: string): string[] {
  return docker(['ps', '-a', '--filter', 'label=io.gpu-cosplay.session', '--format', '{{.ID}} {{.Label "io.gpu-cosplay.session"}}'])
    .split('\n')
    .filter((l) => l.split(' ')[1]?.startsWith(id))
    .map((l) => l.split(' ')[0])
}

export function removeContainers(id: string): void {
  const ids = containersOf(id)
  if (ids.length > 0) docker(['rm', '-f', ...ids])
}

export async function waitFor(test: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (test()) return
    await new Promise((r) => setTimeout(r, 100))
  }
  throw new Error('timed out')
}
