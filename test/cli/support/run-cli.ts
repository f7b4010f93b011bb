/**
 * Runs the BUILT CLI (bin/run.js -> dist/) as a process, the way a user does, against the nvidia-smi
 * simulator in test/sim. Every run gets its own temporary state, config and catalog folders, and a Docker
 * host that does not exist, so results never depend on the machine the tests run on.
 * Build first: npm run build.
 */
import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

export const ROOT = process.cwd()
export const BIN = join(ROOT, 'bin', 'run.js')
export const SIM_BIN = join(ROOT, 'test', 'sim', 'nvidia-smi')
export const MPS_SIM_BIN = join(ROOT, 'test', 'sim', 'nvidia-cuda-mps-control')
/** a socket path that cannot exist: doctor's Docker check fails fast and the same way everywhere */
export const NO_DOCKER = 'unix:///nonexistent/gpu-cosplay-test/docker.sock'

export type CliResult = {
  readonly exitCode: number | null
  readonly stdout: string
  readonly stderr: string
}

export type Env = Record<string, string | undefined>

const temps: string[] = []

/** A fresh folder removed by cleanupTemps() (call it in afterAll). */
export function tempDir(prefix = 'gpu-cosplay-cli-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  temps.push(dir)
  return dir
}

export function cleanupTemps(): void {
  for (const dir of temps.splice(0)) rmSync(dir, {recursive: true, force: true})
}

/** The environment of one run: the caller's PATH (python3 for the simulator), nothing else of the user's. */
export function baseEnv(extra: Env = {}): Env {
  const home = tempDir()
  const env: Env = {
    PATH: process.env.PATH,
    HOME: home,
    XDG_CONFIG_HOME: join(home, 'config'),
    GPU_COSPLAY_STATE_DIR: join(home, 'state'),
    GPU_COSPLAY_NVIDIA_SMI: '/nonexistent/nvidia-smi',
    DOCKER_HOST: NO_DOCKER,
    NO_COLOR: '1',
    ...extra,
  }
  return env
}

export function runCli(args: readonly string[], env: Env = baseEnv()): CliResult {
  const result = spawnSync(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: env as NodeJS.ProcessEnv,
    encoding: 'utf8',
    timeout: 20_000,
  })
  if (result.error) throw result.error
  return {exitCode: result.status, stdout: result.stdout, stderr: result.stderr}
}

/** Runs with --json and parses stdout (which must be exactly one JSON document). */
export function runJson<T = any>(args: readonly string[], env?: Env): CliResult & {json: T} {
  const result = runCli([...args, '--json'], env)
  let json: T
  try {
    json = JSON.parse(result.stdout) as T
  } catch {
    throw new Error(`gpu-cosplay ${args.join(' ')} --json printed no JSON (exit ${result.exitCode}):\n${result.stdout}\n${result.stderr}`)
  }
  return {...result, json}
}

export type SimCall = {readonly argv: readonly string[]; readonly exit: number | null; readonly fault?: string}

/** One simulated host: a state file in a temp folder, driven through the simulator's --sim-* options. */
export class Sim {
  readonly dir: string
  readonly statePath: string

  private constructor(dir: string) {
    this.dir = dir
    this.statePath = join(dir, 'state.json')
  }

  static create(model: string, gpus: number): Sim {
    const sim = new Sim(tempDir('gpu-cosplay-sim-'))
    sim.smi(['--sim-init', '--model', model, '--gpus', String(gpus)])
    return sim
  }

  get logPath(): string {
    return `${this.statePath}.calls.log`
  }

  /** what a CLI run needs to use this simulator */
  env(extra: Env = {}): Env {
    return baseEnv({GPU_COSPLAY_NVIDIA_SMI: SIM_BIN, GPU_COSPLAY_SIM_STATE: this.statePath, ...extra})
  }

  /** runs the simulator directly (the test plays another user or an administrator); throws on failure */
  smi(args: readonly string[]): string {
    const result = spawnSync(SIM_BIN, args, {
      env: {...process.env, GPU_COSPLAY_SIM_STATE: this.statePath},
      encoding: 'utf8',
      timeout: 20_000,
    })
    if (result.error) throw result.error
    if (result.status !== 0) throw new Error(`nvidia-smi ${args.join(' ')} (sim) exited ${result.status}: ${result.stderr}${result.stdout}`)
    return result.stdout
  }

  set(key: string, value: unknown): this {
    return this.setAll({[key]: value})
  }

  /** several keys in one simulator start (each start costs tens of milliseconds, and the suites make thousands) */
  setAll(values: Record<string, unknown>): this {
    this.smi(Object.entries(values).flatMap(([key, value]) => ['--sim-set', `${key}=${JSON.stringify(value)}`]))
    return this
  }

  /** MIG on for these GPUs, as after `nvidia-smi -mig 1` and a reset */
  enableMig(...gpus: number[]): this {
    const keys = gpus.flatMap((gpu) => [`gpus.${gpu}.mig_current`, `gpus.${gpu}.mig_pending`])
    return this.setAll(Object.fromEntries(keys.map((key) => [key, true])))
  }

  /** another user's instances: `nvidia-smi mig -i GPU -cgi IDS -C` */
  createInstances(gpu: number, profileIds: readonly number[]): this {
    this.smi(['mig', '-i', String(gpu), '-cgi', profileIds.join(','), '-C'])
    return this
  }

  state(): any {
    return JSON.parse(readFileSync(this.statePath, 'utf8'))
  }

  stateText(): string {
    return readFileSync(this.statePath, 'utf8')
  }

  calls(): SimCall[] {
    if (!existsSync(this.logPath)) return []
    return readFileSync(this.logPath, 'utf8')
      .split('\n')
      .filter((line) => line.trim() !== '')
      .map((line) => JSON.parse(line) as SimCall)
  }

  /** forget earlier calls, so the next run's calls can be counted */
  clearCalls(): this {
    writeFileSync(this.logPath, '')
    return this
  }

  /** makes the next call whose argv contains `match` (any call without it) fail */
  failNext(fault: {match?: string; message?: string; exit?: number} = {}): this {
    const earlier = this.calls().filter((c) => fault.match === undefined || c.argv.join(' ').includes(fault.match)).length
    return this.set('faults', [{at: earlier + 1, action: 'fail', ...fault}])
  }
}

/** The checks every bad-input case shares: one line on stderr, no stack trace. */
export function stderrLines(result: CliResult): string[] {
  return result.stderr.split('\n').filter((line) => line.trim() !== '')
}

/**
 * Find, edit and save the GPU book of a run's state folder (one GPU: one book), to stage what the CLI alone
 * would not write (an older version's journal, a container without Docker).
 */
export function editBook(env: Env, edit: (book: any) => void): void {
  const dir = join(env.GPU_COSPLAY_STATE_DIR!, 'gpus')
  const books = readdirSync(dir).filter((f) => f.endsWith('.json') && !f.startsWith('.'))
  if (books.length !== 1) throw new Error(`expected one GPU book in ${dir}, found ${books.join(', ') || 'none'}`)
  const file = join(dir, books[0])
  const book = JSON.parse(readFileSync(file, 'utf8'))
  edit(book)
  writeFileSync(file, JSON.stringify(book))
}
