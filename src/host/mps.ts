import path from 'node:path'

import createDebug from 'debug'

import {HostError} from '../core/errors.js'
import type {Executor} from '../core/executor.js'
import {findExecutable} from '../core/find-executable.js'
import {DEBUG_NS, HOST_ENV} from '../core/names.js'
import {saidOrQuoted} from '../core/quote-output.js'

const debug = createDebug(DEBUG_NS.host)

/**
 * The one funnel for NVIDIA's MPS control binary. A daemon is found only through its pipe directory, so
 * each session has its own (CUDA_MPS_PIPE_DIRECTORY) and its own device (CUDA_VISIBLE_DEVICES = MIG UUID):
 * one control daemon per MIG device, as NVIDIA's MIG guide describes MPS on MIG.
 */
export type MpsDirectories = {readonly pipe: string; readonly log: string}

/** The daemon belongs to the session's owner: MPS serves clients of its own uid only. */
export type MpsRunAs = {readonly uid: number; readonly gid: number}

const TIMEOUT_MS = 15_000
const NOT_RUNNING = /Cannot find MPS control daemon|No such file|Connection refused/i

export function mpsControlPathFrom(env: Readonly<Record<string, string | undefined>>): string {
  const fromEnv = env[HOST_ENV.mpsControl]
  return fromEnv !== undefined && fromEnv.trim() !== '' ? fromEnv : 'nvidia-cuda-mps-control'
}

/** The control binary's path when this host has one (an explicit path, or a name on PATH); null: no MPS here. */
export function findMpsControl(env: Readonly<Record<string, string | undefined>>): string | null {
  return findExecutable(mpsControlPathFrom(env), env)
}

export class MpsControl {
  constructor(
    private readonly executor: Executor,
    private readonly binary: string,
  ) {}

  /** `-d`: starts the control daemon for this pipe directory and device. */
  async startDaemon(dirs: MpsDirectories, device: string, runAs: MpsRunAs | null): Promise<void> {
    const result = await this.run(['-d'], dirs, device, runAs)
    if (result.exitCode !== 0) throw this.failure('start the MPS control daemon', dirs, result)
  }

  /** Sends control commands on stdin (one a line), as `echo CMD | nvidia-cuda-mps-control` does. */
  async send(dirs: MpsDirectories, device: string, commands: readonly string[], runAs: MpsRunAs | null): Promise<string> {
    const result = await this.run([], dirs, device, runAs, `${commands.join('\n')}\n`)
    if (result.exitCode !== 0) throw this.failure(`send "${commands.join('; ')}" to the MPS control daemon`, dirs, result)
    return result.stdout
  }

  /** `quit`; a daemon that is not running (never started, already gone) is what undo wants, not an error. */
  async quit(dirs: MpsDirectories, runAs: MpsRunAs | null): Promise<'stopped' | 'not-running'> {
    const result = await this.run([], dirs, null, runAs, 'quit\n')
    if (result.exitCode === 0) return 'stopped'
    if (NOT_RUNNING.test(`${result.stdout}\n${result.stderr}`)) return 'not-running'
    throw this.failure('stop the MPS control daemon', dirs, result)
  }

  private async run(args: readonly string[], dirs: MpsDirectories, device: string | null, runAs: MpsRunAs | null, input?: string) {
    debug('%s %s (pipe %s)', this.binary, args.join(' '), dirs.pipe)
    const env = {
      ...process.env,
      CUDA_MPS_PIPE_DIRECTORY: dirs.pipe,
      CUDA_MPS_LOG_DIRECTORY: dirs.log,
      ...(device === null ? {} : {CUDA_VISIBLE_DEVICES: device}),
    }
    try {
      return await this.executor.run([this.binary, ...args], {env, input, timeoutMs: TIMEOUT_MS, ...(runAs ?? {})})
    } catch (error) {
      throw new HostError('MPS_NOT_STARTED', `${this.binary} could not be started: ${(error as Error).message}`, {
        cause: error,
        fix: [`check ${HOST_ENV.mpsControl} or that nvidia-cuda-mps-control is on PATH: gpu-cosplay doctor`],
      })
    }
  }

  private failure(what: string, dirs: MpsDirectories, result: {exitCode: number; stdout: string; stderr: string}): HostError {
    const first = `${result.stderr}\n${result.stdout}`
      .split('\n')
      .map((l) => l.trim())
      .find((l) => l !== '')
    const said = saidOrQuoted(first ?? null, result.exitCode, result.stderr, result.stdout)
    return new HostError('MPS_FAILED', `could not ${what} (pipe directory ${dirs.pipe}): ${said}`, {
      fix: [`look at its log: ${path.join(dirs.log, 'control.log')}`],
    })
  }
}
