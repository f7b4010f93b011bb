/**
 * Runs the built CLI in the background, in its own process group, so tests can run several at once
 * and kill -9 one together with the nvidia-smi (simulator) it is waiting on.
 */
import {spawn} from 'node:child_process'
import {readFileSync} from 'node:fs'

import {BIN, type CliResult, type Env, type Sim} from './run-cli.js'

export type Running = {
  readonly pid: number
  readonly done: Promise<CliResult & {signal: NodeJS.Signals | null}>
  /** signals the whole process group (the CLI and its nvidia-smi child) */
  kill(signal: NodeJS.Signals): void
}

export function startCli(args: readonly string[], env: Env): Running {
  const child = spawn(process.execPath, [BIN, ...args], {env: env as NodeJS.ProcessEnv, detached: true, stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => (stdout += d))
  child.stderr.on('data', (d) => (stderr += d))
  const done = new Promise<CliResult & {signal: NodeJS.Signals | null}>((resolve) => {
    child.on('close', (code, signal) => resolve({exitCode: code, signal, stdout, stderr}))
  })
  return {
    pid: child.pid!,
    done,
    kill(signal) {
      try {
        process.kill(-child.pid!, signal)
      } catch {
        // already gone
      }
    },
  }
}

export async function runCliAsync(args: readonly string[], env: Env) {
  return startCli(args, env).done
}

/** Simulator processes told to hang run in their own process group (like every nvidia-smi we start): end them. */
export function killHungSims(sim: Sim): void {
  let lines: string[] = []
  try {
    lines = readFileSync(sim.logPath, 'utf8').split('\n').filter(Boolean)
  } catch {
    return
  }
  for (const call of lines.map((l) => JSON.parse(l))) {
    if (!call.fault?.startsWith('hang') || !call.pid) continue
    try {
      process.kill(call.pid, 'SIGKILL')
    } catch {
      // gone already
    }
  }
}

/** Waits until the simulator's call log has a line that satisfies `test` (e.g. the fault fired). */
export async function waitForCall(sim: Sim, test: (call: {argv: string[]; fault?: string}) => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    let lines: string[] = []
    try {
      lines = readFileSync(sim.logPath, 'utf8').split('\n').filter(Boolean)
    } catch {
      // no call yet
    }
    if (lines.map((l) => JSON.parse(l)).some(test)) return
    await new Promise((r) => setTimeout(r, 25))
  }
  throw new Error('timed out waiting for the simulator call')
}

/** The GPU as an observer sees it: what must come back exactly after `down` or `recover`. */
export function gpuState(sim: Sim): unknown[] {
  // the simulator replaces its state file whole (write, then rename), so a plain read sees one consistent state
  return observedGpus(sim.state())
}

/** The observable part of a simulator dump (`nvidia-smi --sim-dump`), wherever the simulator runs. */
export function observedGpus(state: any): unknown[] {
  return state.gpus.map((g: any) => ({
    persistence: g.persistence,
    migCurrent: g.mig_current,
    migPending: g.mig_pending,
    powerLimitW: g.power_limit,
    clocksLocked: g.clocks_locked,
    instances: (g.gis ?? [])
      .map((gi: any) => ({gi: gi.id, profile: gi.profile_id, start: gi.start, cis: (gi.cis ?? []).map((ci: any) => ci.id).sort()}))
      .sort((a: any, b: any) => a.gi - b.gi),
  }))
}

/** nvidia-smi calls that change the GPU, in the order the CLI made them. */
export const MUTATING = /(^| )(-mig|-cgi|-cci|-dci|-dgi|-lgc|-rgc|-pl|-pm)( |$)/

export function mutatingCalls(sim: Sim): string[][] {
  return readFileSync(sim.logPath, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l).argv as string[])
    .filter((argv) => MUTATING.test(argv.join(' ')))
}
