/**
 * The engine's pipes are the member's: a reader that never reads must not stop the engine (it may hold a GPU's lock),
 * and a writer may not make it hold more than one bounded line. Real pipes, to processes that never read or write.
 */
import {execFileSync, spawn} from 'node:child_process'
import {mkdtempSync, openSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {engineOutput, lineReader, LineTooLong, OUTPUT_BOUND_BYTES} from '../../../src/engine/engine-stdio.js'
import {frameIo, STDIN_BACKLOG_BYTES} from '../../../src/engine/frame-io.js'

let dir: string
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gc-stdio-'))))
afterEach(() => rmSync(dir, {recursive: true, force: true}))

/** a pipe (a FIFO) whose only reader is this process, which never reads: its write end */
function stalledPipe(): number {
  const fifo = join(dir, 'stalled')
  execFileSync('mkfifo', [fifo])
  return openSync(fifo, 'r+')
}

/** a pipe's read end, fed with `input` by a child that then exits (end of input) */
function feedingPipe(input: string): number {
  const fifo = join(dir, `feed-${Math.random()}`)
  execFileSync('mkfifo', [fifo])
  spawn('sh', ['-c', 'printf "%s" "$1" > "$2"', 'sh', input, fifo], {stdio: 'ignore'})
  return openSync(fifo, 'r')
}

describe('output to a member who never reads', () => {
  it('returns at once, keeps what waits bounded, and drops progress beyond the bound', () => {
    const out = engineOutput(stalledPipe())
    {
      const line = `${JSON.stringify({t: 'say', text: 'x'.repeat(1000)})}\n`
      let dropped = 0
      // five times the bound: had a write blocked, this loop (and the test) would never end
      for (let i = 0; i < (5 * OUTPUT_BOUND_BYTES) / line.length; i++) if (!out.write(line)) dropped++
      expect(dropped).toBeGreaterThan(0)
      expect(out.pending()).toBeLessThanOrEqual(OUTPUT_BOUND_BYTES + line.length)
      // the one frame that must go (the result) is queued even past the bound
      const before = out.pending()
      out.write('{"t":"result","value":null}\n', {mustSend: true})
      expect(out.pending()).toBeGreaterThan(before)
    }
  })
})

describe('input from a member', () => {
  it('reads lines, then null at the end', async () => {
    const fd = feedingPipe('{"v":1}\n{"t":"cancel"}\nlast')
    const reader = lineReader(fd)
    expect([await reader.next(1024), await reader.next(1024), await reader.next(1024), await reader.next(1024)]).toEqual([
      '{"v":1}',
      '{"t":"cancel"}',
      'last',
      null,
    ])
  })

  it('refuses a line longer than its bound instead of buffering it', async () => {
    const fd = feedingPipe(`${'x'.repeat(5000)}\n`)
    await expect(lineReader(fd).next(1000)).rejects.toBeInstanceOf(LineTooLong)
  })

  it('frames: the first cancel asks to undo; stdin and window size arrive; a line that is not a frame cancels again and is remembered', async () => {
    const frames = [
      {t: 'stdin', data: Buffer.from('typed').toString('base64')},
      {t: 'resize', rows: 50, cols: 120},
      {t: 'stdin-end'},
      {t: 'cancel'},
      {v: 1, op: 'down', names: ['x'], all: false},
      {t: 'cancel'},
    ]
    const fd = feedingPipe(`${frames.map((f) => JSON.stringify(f)).join('\n')}\n`)
    let left = 0
    let onLeave = () => undefined as void
    const leaving = new Promise<void>((resolve) => (onLeave = resolve))
    {
      const io = frameIo(engineOutput(stalledPipe()), lineReader(fd), {size: {rows: 24, cols: 80}, leave: () => (left++, onLeave())})
      const sizes: unknown[] = []
      io.terminal.onResize((size) => sizes.push(size))
      let typed = ''
      for await (const chunk of io.stdin!) typed += String(chunk)
      await leaving
      expect({typed, sizes, size: io.terminal.size(), requested: io.cancel.requested, left, violation: io.violation !== null}).toEqual({
        typed: 'typed',
        sizes: [{rows: 50, cols: 120}],
        size: {rows: 50, cols: 120},
        requested: true,
        left: 1,
        violation: true,
      })
    }
  })

  it('the client gone (end of input) is a cancel, said to nobody', async () => {
    const out = engineOutput(stalledPipe())
    const io = frameIo(out, lineReader(feedingPipe('')), {size: {rows: 24, cols: 80}, leave: () => undefined})
    await new Promise<void>((resolve) => io.cancel.signal.addEventListener('abort', () => resolve()))
    expect({requested: io.cancel.requested, said: out.pending()}).toEqual({requested: true, said: 0})
  })

  it("input the member's program does not read: root holds at most the backlog, drops the rest after the stall, and still hears Ctrl-C", async () => {
    const chunk = Buffer.alloc(192 * 1024, 7).toString('base64')
    const frames = [...Array.from({length: 40}, () => JSON.stringify({t: 'stdin', data: chunk})), JSON.stringify({t: 'cancel'})]
    let next = 0
    const reader = {next: async () => (next < frames.length ? frames[next++] : null), stop: () => undefined}
    const io = frameIo(engineOutput(stalledPipe()), reader, {size: {rows: 24, cols: 80}, leave: () => undefined, stdinStallMs: 50})
    const stdin = io.stdin as import('node:stream').PassThrough
    let highest = 0
    const watch = setInterval(() => (highest = Math.max(highest, stdin.writableLength)), 1)
    await new Promise((resolve) => setTimeout(resolve, 400))
    clearInterval(watch)
    expect(stdin.destroyed).toBe(true)
    expect(highest).toBeLessThanOrEqual(STDIN_BACKLOG_BYTES + 192 * 1024)
    expect(next).toBe(frames.length) // every frame was read after the drop, the cancel among them
    expect(io.cancel.requested).toBe(true)
  })
})
