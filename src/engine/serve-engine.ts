/**
 * dist/engine.js: the root engine of a shared box, one request per run. The entry point the sudoers rule names starts
 * it (setsid, env -i, root's node); it takes no arguments, reads one typed request on stdin (system/engine-protocol.ts),
 * answers it for the caller sudo names, and streams frames back. No command parser, no flag that names a file root
 * writes: what a member can make root do is exactly what handle-request.ts serves.
 */
import {Readable} from 'node:stream'

import {pinEngineEnvironment} from '../core/box-config.js'
import {callContextOf} from '../core/call-context.js'
import {describeFailure} from '../core/failure.js'
import {readBoxConfig} from '../core/read-box-config.js'
import {groupNamesOf} from '../core/user-groups.js'
import {type EngineFrame, MAX_REQUEST_BYTES} from '../system/engine-protocol.js'
import {engineOutput, lineReader, LineTooLong} from './engine-stdio.js'
import {enginesOf, ENGINES_PER_CALLER} from './engines-of-caller.js'
import {frameIo, sendFrame} from './frame-io.js'
import {type ErrorFrame, parseRequest, refusal, refuseToServe} from './request-gate.js'

/** The client sends its request as soon as its flags are read; an engine left waiting for one is a root process held for nothing. */
const REQUEST_WAIT_MS = 15_000

async function serve(): Promise<number> {
  const out = engineOutput(1)
  const stray = engineOutput(2)
  // nothing may write to the frame stream but the frames, nor block on the member's stderr
  redirectStrayOutput((text) => stray.write(text))
  const finish = async (frame: ErrorFrame | Extract<EngineFrame, {t: 'result'}>, exit: number): Promise<number> => {
    sendFrame(out, frame, {mustSend: true})
    await out.close(10_000)
    return exit
  }
  const early = refuseToServe(process.argv.slice(2), process.env, process.getuid?.() ?? -1)
  if (early) return finish(early, early.error.exit)

  const read = readBoxConfig()
  if (!read?.ok) {
    const why = read ? read.why : 'it is missing'
    return finish(
      refusal('BOX_CONFIG_UNTRUSTED', `the box's configuration cannot be used: ${why}`, 4, ['ask an admin: sudo gpu-cosplay system install --yes']),
      4,
    )
  }
  pinEngineEnvironment(read.config)
  // who asks (sudo's SUDO_UID) and the engine's trust, made once here and passed to the request's use case
  const call = callContextOf(process.env, read.config)
  const caller = call.caller
  if (!caller.isRoot && !groupNamesOf(caller.user, caller.uid).includes(read.config.group)) {
    return finish(refusal('NOT_IN_GROUP', `only members of the group ${read.config.group} may use gpu-cosplay on this box`, 4), 4)
  }

  // a member's own limits do not cover root's processes: a bound on how many engines they run at once
  if (!caller.isRoot && enginesOf(caller.uid, process.argv[1]) >= ENGINES_PER_CALLER) {
    return finish(
      refusal('ENGINE_BUSY', `you have ${ENGINES_PER_CALLER} gpu-cosplay requests running on this box already`, 4, [
        'wait for one to end (an exec or ssh you left open, an up --wait), then try again',
      ]),
      4,
    )
  }

  // what `up` needs loads while the request is on its way (a member's client starts the engine before it has one)
  preloadUp()
  const input = lineReader(0)
  let line: string | null
  try {
    line = await withTimeout(input.next(MAX_REQUEST_BYTES), REQUEST_WAIT_MS)
  } catch (error) {
    input.stop()
    const why =
      error instanceof LineTooLong ? `the request is longer than ${MAX_REQUEST_BYTES} bytes` : `no request arrived on stdin within ${REQUEST_WAIT_MS / 1000} s`
    return finish(refusal('BAD_REQUEST', why, 2), 2)
  }
  const request = parseRequest(line)
  if ('t' in request) {
    input.stop()
    return finish(request, request.error.exit)
  }
  // up's first look at the GPUs (read-only) runs while the rest of the engine loads
  if (request.op === 'up') (await import('../client/first-listing.js')).startEarlyListing()
  const size = request.op === 'exec' && request.rows && request.cols ? {rows: request.rows, cols: request.cols} : {rows: 24, cols: 80}
  const io = frameIo(out, input, {size, leave: () => void out.close(2_000).then(() => process.exit(130))})
  process.on('SIGTERM', () => io.interrupt('SIGTERM'))
  let answer: Extract<EngineFrame, {t: 'result' | 'error'}>
  try {
    const {handleRequest} = await import('./handle-request.js')
    answer = {t: 'result', value: (await handleRequest(call, request, io, engineVersion())) ?? null}
  } catch (error) {
    answer = {t: 'error', error: describeFailure(error instanceof Error ? error : new Error(String(error)))}
  }
  // the request was cancelled the moment a second one (or any line that is not a frame) arrived
  if (io.violation !== null) answer = refusal('BAD_REQUEST', io.violation, 2)
  io.finish(answer)
  await out.close(10_000)
  return answer.t === 'result' ? 0 : answer.error.exit
}

function preloadUp(): void {
  for (const module of [
    import('./handle-request.js'),
    import('../client/up-session.js'),
    import('../container/launch-session.js'),
    import('../container/runtime.js'),
  ]) {
    module.catch(() => undefined)
  }
}

/**
 * console and process.stdout writes of any library land on stderr, without blocking; process.stdin is an empty stream
 * (the frames are read by the engine alone). Node's own lazy stdio would open a second handle on the engine's fds:
 * even `import process from 'node:process'` touches every one of them.
 */
function redirectStrayOutput(write: (text: string) => void): void {
  const sink = {write: (chunk: unknown) => write(typeof chunk === 'string' ? chunk : String(chunk)), isTTY: false}
  for (const name of ['stdout', 'stderr'] as const) {
    Object.defineProperty(process, name, {value: Object.assign(Object.create(null), sink), configurable: true})
  }
  Object.defineProperty(process, 'stdin', {value: Readable.from([]), configurable: true})
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('timed out')), ms)
    promise.then(
      (value) => {
        clearTimeout(timer)
        resolve(value)
      },
      (error) => {
        clearTimeout(timer)
        reject(error)
      },
    )
  })
}

declare const GPU_COSPLAY_VERSION: string
function engineVersion(): string {
  return typeof GPU_COSPLAY_VERSION === 'string' ? GPU_COSPLAY_VERSION : '0.0.0-dev'
}

// Ctrl-C reaches the engine as a frame from its client; a terminal's signals (relayed by sudo) must not count twice.
// Job control cannot stop it: the entry point's setsid leaves it in an orphaned process group.
for (const signal of ['SIGINT', 'SIGHUP', 'SIGTSTP', 'SIGTTIN', 'SIGTTOU', 'SIGPIPE'] as const) process.on(signal, () => undefined)
process.exitCode = await serve()
process.exit()
