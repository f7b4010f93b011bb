/**
 * A box set up the way docs/shared-box.md's "Shared box" says: gpu-cosplay installed for the whole box from the
 * tarball `npm pack` makes (npm install -g, root-owned, under its own prefix here), then `system install`; two members
 * of the group who are not in the docker group and have no sudo rule of their own. The GPU is the simulator, behind a
 * root-owned wrapper that names its state (the engine's environment is root's, not the test's).
 */
import {spawn, spawnSync} from 'node:child_process'
import {chmodSync, chownSync, copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {MPS_SIM_BIN, ROOT, SIM_BIN, SIM_DIR, SIM_MODULE, type Result} from './support.js'

export const PREFIX = '/opt/gpu-cosplay-e2e'
export const CLI = join(PREFIX, 'bin', 'gpu-cosplay')
export const STATE_DIR = '/var/lib/gpu-cosplay-e2e'
const PROGRAMS = '/opt/gpu-cosplay-e2e-sim'
const SIM_STATE_DIR = '/var/lib/gpu-cosplay-e2e-sim'
export const SIM_STATE = join(SIM_STATE_DIR, 'state.json')
export const GROUP = 'gpu-cosplay-e2e'
/** what the one sudoers rule names: a member may hand it any argv and any stdin */
export const ENGINE = '/usr/local/libexec/gpu-cosplay/engine'
export const MEMBERS = {a: {user: 'gcshare-a', uid: 1301}, b: {user: 'gcshare-b', uid: 1302}} as const
export type Member = keyof typeof MEMBERS

function run(argv: readonly string[], options: {input?: string; env?: NodeJS.ProcessEnv; cwd?: string} = {}): Result {
  const r = spawnSync(argv[0], argv.slice(1), {encoding: 'utf8', timeout: 300_000, stdio: ['pipe', 'pipe', 'pipe'], ...options})
  if (r.error) throw r.error
  return {exitCode: r.status, stdout: r.stdout, stderr: r.stderr}
}

function must(argv: readonly string[], options?: Parameters<typeof run>[1]): string {
  const r = run(argv, options)
  if (r.exitCode !== 0) throw new Error(`${argv.join(' ')}: exit ${r.exitCode}\n${r.stdout}\n${r.stderr}`)
  return r.stdout
}

/**
 * A suite that failed before its tearDown (or a run that was killed) can leave a session's staging binds mounted
 * under the state directory; they would make every later setUp fail with EBUSY instead of its own result.
 */
function clearLeftMounts(dir: string): void {
  const points = readFileSync('/proc/self/mountinfo', 'utf8')
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((point): point is string => point !== undefined && (point === dir || point.startsWith(`${dir}/`)))
    .sort()
    .reverse()
  for (const point of points) {
    console.warn(`shared box: unmounting ${point}, left by an earlier run`)
    run(['umount', '-l', point])
  }
}

/** a command running in the background (SharedBox.start) */
export type Background = {
  readonly pid: number
  readonly done: Promise<Result>
  exited(): boolean
  stdout(): string
  stderr(): string
  write(text: string): void
  end(): void
  kill(): void
}

export class SharedBox {
  readonly id = `sb${process.pid}x${Math.random().toString(36).slice(2, 6)}`

  /** Installs everything; returns `system install --json`'s result. */
  setUp(): any {
    // the package, as an admin installs it for the whole box
    const pack = must(['npm', 'pack', '--silent', '--pack-destination', '/tmp'], {cwd: ROOT}).trim().split('\n').pop()!
    rmSync(PREFIX, {recursive: true, force: true})
    must(['npm', 'install', '-g', '--prefix', PREFIX, '--prefer-offline', '--no-audit', '--no-fund', join('/tmp', pack)])
    // the simulated GPU behind root-owned wrappers (the engine runs what the configuration names, with root's environment)
    rmSync(PROGRAMS, {recursive: true, force: true})
    mkdirSync(PROGRAMS, {mode: 0o755})
    copyFileSync(SIM_BIN, join(PROGRAMS, 'nvidia-smi-sim'))
    copyFileSync(SIM_MODULE, join(PROGRAMS, 'nvidia_smi_sim.py'))
    copyFileSync(MPS_SIM_BIN, join(PROGRAMS, 'mps-sim'))
    rmSync(SIM_STATE_DIR, {recursive: true, force: true})
    mkdirSync(SIM_STATE_DIR, {mode: 0o755})
    const wrapper = (program: string) => `#!/bin/sh\nGPU_COSPLAY_SIM_STATE=${SIM_STATE} exec /usr/bin/python3 ${join(PROGRAMS, program)} "$@"\n`
    writeFileSync(join(PROGRAMS, 'nvidia-smi'), wrapper('nvidia-smi-sim'), {mode: 0o755})
    writeFileSync(join(PROGRAMS, 'nvidia-cuda-mps-control'), wrapper('mps-sim'), {mode: 0o755})
    this.smi(['--sim-init', '--model', 'h200', '--gpus', '1'])
    this.smi(['--sim-set', 'require_root=true'])
    // the stub runtime hook finds the simulated GPU for the container here
    symlinkSync(SIM_STATE, join(SIM_DIR, `${this.id}.json`))
    for (const m of Object.values(MEMBERS)) this.makeUser(m.user, m.uid)
    clearLeftMounts(STATE_DIR)
    rmSync(STATE_DIR, {recursive: true, force: true})
    const installed = this.root([
      'system',
      'install',
      '--group',
      GROUP,
      '--state-dir',
      STATE_DIR,
      '--nvidia-smi',
      join(PROGRAMS, 'nvidia-smi'),
      '--mps-control',
      join(PROGRAMS, 'nvidia-cuda-mps-control'),
      '--yes',
      '--json',
    ])
    if (installed.exitCode !== 0) throw new Error(`system install: ${installed.stdout}${installed.stderr}`)
    for (const m of Object.values(MEMBERS)) must(['usermod', '-aG', GROUP, m.user])
    return JSON.parse(installed.stdout)
  }

  tearDown(): void {
    this.root(['down', '--all'])
    this.root(['system', 'uninstall', '--yes'])
    rmSync(join(SIM_DIR, `${this.id}.json`), {force: true})
    for (const m of Object.values(MEMBERS)) run(['userdel', '-r', m.user])
    run(['groupdel', GROUP])
    for (const dir of [PREFIX, PROGRAMS, SIM_STATE_DIR, STATE_DIR]) rmSync(dir, {recursive: true, force: true})
  }

  /** a home only its user can enter, a workspace in it, no docker group, no sudo rule */
  private makeUser(user: string, uid: number): void {
    run(['userdel', '-r', user])
    must(['useradd', '--create-home', '--uid', String(uid), '--user-group', '--shell', '/bin/bash', user])
    const home = this.home(user)
    chmodSync(home, 0o700)
    mkdirSync(join(home, 'ws'))
    chownSync(join(home, 'ws'), uid, uid)
  }

  home(user: string): string {
    return `/home/${user}`
  }

  smi(args: readonly string[]): string {
    return must([join(PROGRAMS, 'nvidia-smi'), ...args])
  }

  /** what `down` must put back */
  gpuState(): unknown {
    const g = JSON.parse(this.smi(['--sim-dump'])).gpus[0]
    return {persistence: g.persistence, mig: [g.mig_current, g.mig_pending], powerLimitW: g.power_limit, clocks: g.clocks_locked, gis: g.gis ?? []}
  }

  /** the installed CLI as root, with root's own clean environment */
  root(args: readonly string[]): Result {
    return run([CLI, ...args], {env: {PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/root', NO_COLOR: '1'}})
  }

  /** a command line as the member, from their home, with a login's environment plus `extra` */
  as(member: Member, argv: readonly string[], extra: Record<string, string> = {}, input?: string): Result {
    const {user} = MEMBERS[member]
    return run(['runuser', '-u', user, '--', 'env', '-i', ...this.loginEnv(member, extra), ...argv], {cwd: this.home(user), input})
  }

  /** a login's environment for the member, plus `extra`, as `env -i` words */
  private loginEnv(member: Member, extra: Record<string, string> = {}): string[] {
    const {user} = MEMBERS[member]
    const env = {PATH: '/usr/local/bin:/usr/bin:/bin', HOME: this.home(user), USER: user, LOGNAME: user, NO_COLOR: '1', ...extra}
    return Object.entries(env).map(([k, v]) => `${k}=${v}`)
  }

  /**
   * A command line as the member, in the background, in a session and process group of its own (its pid is both:
   * kill() takes runuser and everything below it that stayed in the group). stdin stays open until end() or kill().
   */
  start(member: Member, argv: readonly string[], extra: Record<string, string> = {}): Background {
    const {user} = MEMBERS[member]
    const child = spawn('runuser', ['-u', user, '--', 'env', '-i', ...this.loginEnv(member, extra), ...argv], {
      cwd: this.home(user),
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.stdin.on('error', () => undefined) // a process that exits before reading its stdin
    let exited = false
    const done = new Promise<Result>((resolve) =>
      child.on('close', (code, signal) => {
        exited = true
        resolve({exitCode: code ?? (signal ? 128 : null), stdout, stderr})
      }),
    )
    return {
      pid: child.pid!,
      done,
      exited: () => exited,
      stdout: () => stdout,
      stderr: () => stderr,
      write: (text: string) => void child.stdin.write(text),
      end: () => child.stdin.end(),
      kill: () => {
        try {
          process.kill(-child.pid!, 'SIGKILL')
        } catch {
          // gone already
        }
      },
    }
  }

  /** `sudo -n ENGINE argv...` as the member, as the sudo rule allows: the bytes go to the engine as they are */
  engine(member: Member, argv: readonly string[], input?: string): Result {
    return this.as(member, ['/usr/bin/sudo', '-n', ENGINE, ...argv], {}, input)
  }

  /** gpu-cosplay as the member */
  cli(member: Member, args: readonly string[], extra: Record<string, string> = {}): Result {
    return this.as(member, [CLI, ...args], extra)
  }

  json<T = any>(member: Member, args: readonly string[], extra: Record<string, string> = {}): Result & {json: T} {
    const r = this.cli(member, [...args, '--json'], extra)
    try {
      return {...r, json: JSON.parse(r.stdout) as T}
    } catch {
      throw new Error(`gpu-cosplay ${args.join(' ')} --json as ${member}: no JSON (exit ${r.exitCode})\n${r.stdout}\n${r.stderr}`)
    }
  }

  /** every nvidia-smi call the engine made */
  calls(): string[] {
    const log = `${SIM_STATE}.calls.log`
    if (!existsSync(log)) return []
    return readFileSync(log, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l).argv as string[]).join(' '))
  }

  mutatingCalls(): string[] {
    return this.calls().filter((a) => /(^| )(-mig|-cgi|-cci|-dci|-dgi|-lgc|-rgc|-pl|-pm)( |$)/.test(a))
  }
}
