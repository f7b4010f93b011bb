/**
 * The engine's end of its pipes to the member's client. The member holds the other ends, so nothing here may wait on
 * them: output is written without blocking (Node writes to pipes synchronously by default) and kept in memory up to
 * a bound, past which progress is dropped and streamed output waits, never a lock holder; input is read in lines of
 * bounded length. A terminal or a file in their place (a member running the engine by hand) works the same way.
 */
import fs from 'node:fs'
import net from 'node:net'
import tty from 'node:tty'
import type {Readable, Writable} from 'node:stream'

/** what may wait in memory for a member's client to read it; progress beyond it is dropped */
export const OUTPUT_BOUND_BYTES = 1024 * 1024

export type EngineOutput = {
  /** a whole line; false when it was dropped (or could only be queued beyond the bound) */
  write(line: string, options?: {readonly mustSend?: boolean}): boolean
  /** bytes waiting for the reader */
  pending(): number
  /** resolves once the reader has less than the bound waiting again (at once when it has) */
  drained(): Promise<void>
  /** everything written, or the reader gone, or timeoutMs passed */
  close(timeoutMs: number): Promise<void>
}

function writableOn(fd: number): Writable | null {
  const kind = guessHandleType(fd)
  if (kind === 'PIPE' || kind === 'UNIX') return new net.Socket({fd, readable: false, writable: true})
  if (kind === 'TTY') {
    const stream = new tty.WriteStream(fd)
    // a tty.WriteStream blocks on POSIX; a stopped terminal (Ctrl-S) must not stop the engine
    ;(stream as unknown as {_handle?: {setBlocking?: (blocking: boolean) => void}})._handle?.setBlocking?.(false)
    return stream
  }
  return null
}

function guessHandleType(fd: number): string {
  // node:tty.isatty and fstat tell enough: a FIFO or socket is a stream libuv can write without blocking
  if (tty.isatty(fd)) return 'TTY'
  try {
    const stat = fs.fstatSync(fd)
    if (stat.isFIFO()) return 'PIPE'
    if (stat.isSocket()) return 'UNIX'
    return 'FILE'
  } catch {
    return 'UNKNOWN'
  }
}

/** A non-blocking writer on fd (1 for frames, 2 for stray output). */
export function engineOutput(fd: number): EngineOutput {
  const stream = writableOn(fd)
  let gone = false
  if (stream) stream.on('error', () => (gone = true))
  const pending = () => (stream && !gone ? stream.writableLength : 0)
  return {
    write(line, options = {}) {
      if (gone) return false
      if (!stream) {
        // a regular file (or /dev/null): writes there do not wait on anyone
        try {
          fs.writeSync(fd, line)
          return true
        } catch {
          gone = true
          return false
        }
      }
      if (!options.mustSend && pending() > OUTPUT_BOUND_BYTES) return false
      stream.write(line)
      return pending() <= OUTPUT_BOUND_BYTES
    },
    pending,
    drained() {
      if (!stream || gone || pending() <= OUTPUT_BOUND_BYTES) return Promise.resolve()
      return new Promise((resolve) => {
        const check = () => {
          if (gone || pending() <= OUTPUT_BOUND_BYTES) {
            stream.off('drain', check)
            stream.off('close', check)
            resolve()
          }
        }
        stream.on('drain', check)
        stream.on('close', check)
      })
    },
    close(timeoutMs) {
      if (!stream || gone) return Promise.resolve()
      return new Promise((resolve) => {
        const timer = setTimeout(resolve, timeoutMs)
        timer.unref()
        stream.end(() => {
          clearTimeout(timer)
          resolve()
        })
        stream.once('error', () => {
          clearTimeout(timer)
          resolve()
        })
      })
    },
  }
}

export type LineReader = {
  /** the next line (without its newline), or null at the end of input; rejects on a line longer than its limit */
  next(maxBytes: number): Promise<string | null>
  /** stop reading (the rest is never read) */
  stop(): void
}

/** How many lines' worth (of at most 1 MiB each) of unread input the reader holds before it stops reading the pipe. */
const BACKLOG_LINES = 2

/** Lines of stdin, each at most maxBytes long: a member cannot make the engine hold more than one line in memory. */
export function lineReader(fd: number): LineReader {
  const kind = guessHandleType(fd)
  const source: Readable =
    kind === 'TTY'
      ? new tty.ReadStream(fd)
      : kind === 'PIPE' || kind === 'UNIX'
        ? new net.Socket({fd, readable: true, writable: false})
        : fs.createReadStream('', {fd})
  let buffered = Buffer.alloc(0)
  let ended = false
  let failed: Error | null = null
  let wake: (() => void) | null = null
  let limit = Infinity
  source.on('data', (chunk: Buffer) => {
    buffered = Buffer.concat([buffered, chunk])
    // a line still without its end past the limit: stop reading, the caller refuses it; and lines the caller has not
    // taken yet (it waits for a program to read its input) stay in the pipe, not in root's memory
    if ((buffered.indexOf(10) < 0 && buffered.length > limit) || buffered.length > BACKLOG_LINES * Math.min(limit, 1 << 20)) source.pause()
    wake?.()
  })
  source.on('end', () => {
    ended = true
    wake?.()
  })
  source.on('error', (error) => {
    failed = error
    wake?.()
  })
  return {
    async next(maxBytes) {
      limit = maxBytes
      for (;;) {
        const at = buffered.indexOf(10)
        if (at >= 0) {
          if (at > maxBytes) throw new LineTooLong(maxBytes)
          const line = buffered.subarray(0, at).toString('utf8')
          buffered = buffered.subarray(at + 1)
          source.resume()
          return line
        }
        if (buffered.length > maxBytes) throw new LineTooLong(maxBytes)
        if (failed || ended) return buffered.length > 0 && !failed ? takeRest() : null
        source.resume()
        await new Promise<void>((resolve) => (wake = resolve))
        wake = null
      }
      function takeRest(): string {
        const line = buffered.toString('utf8')
        buffered = Buffer.alloc(0)
        return line
      }
    },
    stop() {
      source.pause()
      source.removeAllListeners('data')
      ;(source as Readable & {unref?: () => void}).unref?.()
    },
  }
}

export class LineTooLong extends Error {
  constructor(readonly maxBytes: number) {
    super(`a line longer than ${maxBytes} bytes`)
  }
}
