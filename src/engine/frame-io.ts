/**
 * A request's RequestIo inside the engine: progress and a command's output go out as frames, the member's keystrokes,
 * window size and Ctrl-C come in as frames. The client closing its end (killed, or gone) counts as a Ctrl-C.
 */
import {PassThrough, Writable} from 'node:stream'

import type {CancelToken, Progress, RequestIo, TerminalSize} from '../client/request-io.js'
import {type EngineFrame, inputFrameSchema, MAX_FRAME_BYTES} from '../system/engine-protocol.js'
import type {EngineOutput, LineReader} from './engine-stdio.js'

export type FrameIo = RequestIo & {
  /** a line after the request that is not a frame (a second request...): the request is cancelled and refused */
  readonly violation: string | null
  /** a signal to the engine itself (SIGTERM at shutdown): as a cancel frame */
  interrupt(why: string): void
  /** the one last frame: the result or the error */
  finish(frame: Extract<EngineFrame, {t: 'result' | 'error'}>): void
}

/** What root keeps of a member's input that their program has not read yet, and how long it waits for it to be read. */
export const STDIN_BACKLOG_BYTES = 1024 * 1024
export const STDIN_STALL_MS = 30_000

/** Whether `stream` drained within `ms` (false also when cancelled meanwhile: no more input is taken then). */
function drained(stream: Writable, ms: number, cancelled: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const done = (value: boolean) => {
      clearTimeout(timer)
      stream.off('drain', onDrain)
      stream.off('close', onClose)
      cancelled.removeEventListener('abort', onClose)
      resolve(value)
    }
    const onDrain = () => done(true)
    const onClose = () => done(false)
    const timer = setTimeout(() => done(false), ms)
    stream.once('drain', onDrain)
    stream.once('close', onClose)
    cancelled.addEventListener('abort', onClose, {once: true})
  })
}

export function sendFrame(out: EngineOutput, frame: EngineFrame, options?: {readonly mustSend?: boolean}): boolean {
  return out.write(`${JSON.stringify(frame)}\n`, options)
}

/**
 * `size`: the terminal size the request named (exec), else 24x80. `leave`: what a second cancel does (the process
 * exits; the journal keeps what was done for `gpu-cosplay recover`).
 */
export function frameIo(out: EngineOutput, input: LineReader, options: {size: TerminalSize; leave: () => void; stdinStallMs?: number}): FrameIo {
  const say = (text: string) => void sendFrame(out, {t: 'say', text})
  const progress: Progress = {
    say,
    start: (text) => void sendFrame(out, {t: 'start', text}),
    stop: (text) => void sendFrame(out, {t: 'stop', text}),
  }
  const aborter = new AbortController()
  let cancels = 0
  /** why: null when the client is gone (nobody reads what would be said) */
  const cancel = (why: string | null) => {
    cancels++
    if (cancels === 1) {
      if (why) say(`${why}: finishing the current step, then undoing (press Ctrl-C again to leave it to gpu-cosplay recover)`)
      aborter.abort()
    } else if (cancels === 2) {
      if (why) say(`${why} again: leaving now; the journal keeps what was done, run gpu-cosplay recover to undo it`)
      options.leave()
    }
  }
  const token: CancelToken = {
    get requested() {
      return cancels > 0
    },
    signal: aborter.signal,
  }

  const stdin = new PassThrough()
  let violation: string | null = null
  let size = options.size
  const resized = new Set<(size: TerminalSize) => void>()
  void (async () => {
    for (;;) {
      let line: string | null
      try {
        line = await input.next(MAX_FRAME_BYTES)
      } catch {
        line = null // an oversized frame: the client is not ours to trust further
      }
      if (line === null) {
        stdin.end()
        cancel(null)
        return
      }
      const parsed = safeParse(line)
      if (parsed === null) {
        // one request per call: anything else is a client that is not ours to trust further
        violation ??= 'a line after the request that is not a frame (the engine serves one request per call)'
        cancel(null)
        stdin.end()
        return
      }
      if (parsed.t === 'cancel') cancel('Ctrl-C')
      else if (parsed.t === 'stdin') {
        if (stdin.destroyed || stdin.writableEnded) continue
        stdin.write(Buffer.from(parsed.data, 'base64'))
        // a program that does not read its input: root holds at most a backlog of it, for a while, then drops it
        if (stdin.writableLength > STDIN_BACKLOG_BYTES && !(await drained(stdin, options.stdinStallMs ?? STDIN_STALL_MS, aborter.signal))) {
          say('the program has not read its input for a while: the rest of it is dropped')
          stdin.destroy()
        }
      } else if (parsed.t === 'stdin-end') {
        if (!stdin.destroyed) stdin.end()
      } else if (parsed.t === 'resize') {
        size = {rows: parsed.rows, cols: parsed.cols}
        for (const listener of resized) listener(size)
      }
    }
  })()

  return {
    progress,
    cancel: token,
    stdin,
    stdout: dataStream(out, 'stdout'),
    stderr: dataStream(out, 'stderr'),
    terminal: {
      size: () => size,
      onResize(listener) {
        resized.add(listener)
        return () => resized.delete(listener)
      },
    },
    get violation() {
      return violation
    },
    interrupt: (why) => cancel(why),
    finish(frame) {
      input.stop()
      sendFrame(out, frame, {mustSend: true})
    },
  }
}

function safeParse(line: string) {
  try {
    const parsed = inputFrameSchema.safeParse(JSON.parse(line))
    return parsed.success ? parsed.data : null
  } catch {
    return null
  }
}

/** A command's output as frames; it waits (backpressure) while the member's client lags, holding no lock meanwhile. */
function dataStream(out: EngineOutput, t: 'stdout' | 'stderr'): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (let at = 0; at < chunk.length; at += 48 * 1024) {
        sendFrame(out, {t, data: chunk.subarray(at, at + 48 * 1024).toString('base64')}, {mustSend: true})
      }
      out.drained().then(() => done())
    },
  })
}
