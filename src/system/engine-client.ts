/**
 * A member's side of the engine boundary: one typed request to `sudo -n ENGINE` on its stdin, the frames that come
 * back turned into progress, output and a result (or the engine's error, with its code and exit). The member's
 * keystrokes, window size and Ctrl-C go the other way as frames; this process dying closes the pipe, which the
 * engine takes as a Ctrl-C.
 */
import {type ChildProcess, type ChildProcessByStdio, spawn} from 'node:child_process'
import type {Readable, Writable} from 'node:stream'

import {type BoxConfig, ENGINE_ENV} from '../core/box-config.js'
import {CosplayError, type ExitCode, StateError} from '../core/errors.js'
import {readBoxConfig} from '../core/read-box-config.js'
import {groupId} from '../core/user-groups.js'
import {CANCEL_ON_EOF_ENV} from '../remote/remote-command-line.js'
import {type EngineFrame, type EngineOp, type RequestOf, requestLine, STDIN_CHUNK_BYTES} from './engine-protocol.js'

/**
 * The box's configuration when this process is a member's client on an installed box (not root, not a sandbox: see
 * engine-route.ts); null otherwise. A box whose configuration cannot be trusted is an error a member cannot fix.
 */
export function memberOfBox(env: NodeJS.ProcessEnv = process.env): BoxConfig | null {
  if (process.getuid?.() === 0 || env[ENGINE_ENV] !== 'member') return null
  const read = readBoxConfig()
  if (read === null) return null
  if (!read.ok) {
    throw new StateError('BOX_CONFIG_UNTRUSTED', `the box's configuration cannot be used: ${read.why}`, {
      exit: 4,
      fix: ['ask an admin: sudo gpu-cosplay system install --yes'],
    })
  }
  return read.config
}

export type EngineCallIo = {
  readonly progress: {say(line: string): void; start(action: string): void; stop(outcome: string): void} | null
  /** Ctrl-C here asks the engine to cancel (the first: finish the step, then undo; the second: leave now) */
  readonly cancellable: boolean
  readonly stdin?: Readable | null
  readonly stdout?: Writable
  readonly stderr?: Writable
  /** the terminal's size changes, sent for a command with a tty */
  readonly onResize?: (listener: (size: {rows: number; cols: number}) => void) => () => void
}

/** An engine started before the request was ready (bin/run.js, for a member's up): sudo and node start meanwhile. */
let early: {readonly engine: string; readonly child: ChildProcess} | null = null

/**
 * bin/run.js: start the engine for a member's `up` now, while this process loads the rest of the CLI and builds the
 * request (the engine waits for it on stdin). Unreferenced until taken, so a command that fails first exits at once;
 * the engine then sees its stdin close without a request and ends without doing anything.
 */
export function startEarlyEngine(config: BoxConfig): void {
  if (early !== null || !isMember(config)) return
  const child = spawnEngine(config)
  child.on('error', () => undefined)
  child.unref()
  for (const stream of [child.stdin, child.stdout]) (stream as unknown as {unref?: () => void}).unref?.()
  early = {engine: config.engine, child}
}

/** startEarlyEngine for a member's `up` on this box (not its help, not `up --host`) */
export function startEarlyEngineFor(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): void {
  if (argv[0] !== 'up' || env[ENGINE_ENV] !== 'member' || env.GPU_COSPLAY_HOST?.trim()) return
  if (argv.some((arg) => arg === '--host' || arg.startsWith('--host=') || arg === '-h' || arg === '--help')) return
  const read = readBoxConfig()
  if (read?.ok) startEarlyEngine(read.config)
}

function spawnEngine(config: BoxConfig): ChildProcess {
  return spawn('sudo', ['-n', '--', config.engine], {stdio: ['pipe', 'pipe', 'inherit']})
}

/** the engine started early for this box, else one started now */
function takeEngine(config: BoxConfig): ChildProcess {
  const taken = early
  early = null
  if (taken === null || taken.engine !== config.engine || taken.child.exitCode !== null || taken.child.signalCode !== null) return spawnEngine(config)
  taken.child.ref()
  for (const stream of [taken.child.stdin, taken.child.stdout]) (stream as unknown as {ref?: () => void}).ref?.()
  return taken.child
}

function isMember(config: BoxConfig): boolean {
  const gid = groupId(config.group)
  return gid !== null && (process.getgroups?.() ?? []).includes(gid)
}

/** the engine's answers are root's, but bounded all the same */
const MAX_ANSWER_LINE = 64 * 1024 * 1024

export async function askEngine<Op extends EngineOp>(config: BoxConfig, request: RequestOf<Op> & {readonly op: Op}, io: EngineCallIo): Promise<unknown> {
  if (!isMember(config)) {
    throw new StateError('NOT_IN_GROUP', `only members of the group ${config.group} may use gpu-cosplay on this box`, {
      exit: 4,
      fix: [`ask an admin: sudo usermod -aG ${config.group} $USER (then log in again)`],
    })
  }
  const child = takeEngine(config) as ChildProcessByStdio<Writable, Readable, null>
  const send = (frame: object) => {
    if (!child.stdin.destroyed) child.stdin.write(`${JSON.stringify(frame)}\n`)
  }
  child.stdin.on('error', () => undefined)
  child.stdin.write(requestLine(request))

  const cleanups: Array<() => void> = []
  if (io.cancellable) {
    const cancel = () => send({t: 'cancel'})
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
      process.on(signal, cancel)
      cleanups.push(() => process.off(signal, cancel))
    }
    // run by a --host client: ssh without a pty sends no signal when that client goes, it closes stdin
    if (process.env[CANCEL_ON_EOF_ENV] === '1' && !io.stdin) {
      process.stdin.on('end', cancel).resume()
      cleanups.push(() => process.stdin.off('end', cancel).pause())
    }
  }
  if (io.onResize) cleanups.push(io.onResize(({rows, cols}) => send({t: 'resize', rows, cols})))
  if (io.stdin) {
    const stdin = io.stdin
    const onData = (chunk: Buffer) => {
      for (let at = 0; at < chunk.length; at += STDIN_CHUNK_BYTES) send({t: 'stdin', data: chunk.subarray(at, at + STDIN_CHUNK_BYTES).toString('base64')})
    }
    const onEnd = () => send({t: 'stdin-end'})
    stdin.on('data', onData).on('end', onEnd)
    cleanups.push(() => stdin.off('data', onData).off('end', onEnd))
  }

  return new Promise((resolve, reject) => {
    let answer: {value: unknown} | {error: CosplayError} | null = null
    let buffered = ''
    const take = (frame: EngineFrame) => {
      switch (frame.t) {
        case 'say':
          io.progress?.say(frame.text)
          break
        case 'start':
          io.progress?.start(frame.text)
          break
        case 'stop':
          io.progress?.stop(frame.text)
          break
        case 'stdout':
        case 'stderr': {
          const target = frame.t === 'stdout' ? (io.stdout ?? process.stdout) : (io.stderr ?? process.stderr)
          if (!target.write(Buffer.from(frame.data, 'base64'))) {
            child.stdout.pause()
            target.once('drain', () => child.stdout.resume())
          }
          break
        }
        case 'result':
          answer = {value: frame.value}
          child.stdin.end()
          break
        case 'error': {
          const e = frame.error
          answer = {error: new CosplayError(e.code, e.message, e.exit as ExitCode, {fix: e.fix})}
          child.stdin.end()
          break
        }
      }
    }
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk
      if (buffered.length > MAX_ANSWER_LINE && !buffered.includes('\n')) child.kill()
      let at: number
      while ((at = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, at)
        buffered = buffered.slice(at + 1)
        try {
          take(JSON.parse(line) as EngineFrame)
        } catch {
          // not a frame: nothing of the engine's own
        }
      }
    })
    child.on('error', (error) => {
      for (const cleanup of cleanups) cleanup()
      reject(unreachable(error.message))
    })
    child.on('close', (code) => {
      for (const cleanup of cleanups) cleanup()
      const got = answer as {value: unknown} | {error: CosplayError} | null
      // a second Ctrl-C: the engine left the rest to `recover` (and said so), as this process would have
      if (got === null && code === 130) process.exit(130)
      if (got === null) reject(unreachable(`it ended without an answer (exit ${code})`))
      else if ('error' in got) reject(got.error)
      else resolve(got.value)
    })
  })
}

function unreachable(why: string): StateError {
  return new StateError('ENGINE_UNREACHABLE', `cannot run the gpu-cosplay engine through sudo: ${why}`, {
    exit: 4,
    fix: ['ask an admin: sudo gpu-cosplay system status'],
  })
}
