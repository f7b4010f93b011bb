/**
 * `status --watch`: a picture redrawn in place until Ctrl-C. On a terminal it draws on the alternate screen (the
 * shell's screen comes back untouched), without clearing it between frames: each frame homes the cursor, rewrites
 * every line with a clear-to-end-of-line, and clears what is below, so nothing flickers. Lines wider than the
 * screen are clipped (autowrap off) instead of scrolling the frame. Piped, frames follow one another.
 */
const CSI = '\u001B['
const ENTER = `${CSI}?1049h${CSI}?25l${CSI}?7l${CSI}H${CSI}2J`
const LEAVE = `${CSI}?7h${CSI}?25h${CSI}?1049l`

export type WatchOutput = {
  write(text: string): unknown
  readonly isTTY?: boolean
  readonly rows?: number
  on?(event: 'resize', listener: () => void): unknown
  off?(event: 'resize', listener: () => void): unknown
}

export type WatchOptions = {
  readonly intervalMs: number
  /** one frame's text; called again each interval (and when the window changes size) */
  readonly frame: () => Promise<string>
  readonly out?: WatchOutput
  /** resolves when the watch should end; by default the first SIGINT, SIGTERM or SIGHUP */
  readonly stop?: Promise<void>
}

export async function watchScreen(options: WatchOptions): Promise<void> {
  const out = options.out ?? process.stdout
  const stop = options.stop ?? firstSignal()
  let stopped = false
  let wake: () => void = () => undefined
  void stop.then(() => {
    stopped = true
    wake()
  })
  const onResize = () => wake()
  if (out.isTTY) {
    out.write(ENTER)
    out.on?.('resize', onResize)
  }
  try {
    while (!stopped) {
      const text = await options.frame()
      if (stopped) break
      out.write(out.isTTY ? inPlace(text, out.rows) : `${text}\n\n`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, options.intervalMs)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  } finally {
    if (out.isTTY) {
      out.off?.('resize', onResize)
      out.write(LEAVE)
    }
  }
}

/** the frame over the last one: home, each line then clear to its end, then clear below; cut to the screen's rows */
function inPlace(text: string, rows: number | undefined): string {
  const lines = text.split('\n')
  const shown = rows && rows > 0 ? lines.slice(0, rows) : lines
  return `${CSI}H${shown.map((line) => `${line}${CSI}K`).join('\r\n')}${CSI}J`
}

function firstSignal(): Promise<void> {
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const
  return new Promise((resolve) => {
    const done = () => {
      for (const s of signals) process.off(s, done)
      resolve()
    }
    for (const s of signals) process.on(s, done)
  })
}
