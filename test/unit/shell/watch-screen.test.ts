import {describe, expect, it} from '@jest/globals'

import {watchScreen} from '../../../src/shell/watch-screen.js'

const CSI = '\u001B['

function fakeTerminal(isTTY: boolean) {
  const writes: string[] = []
  return {writes, out: {isTTY, rows: 3, write: (text: string) => writes.push(text)}}
}

describe('watchScreen', () => {
  it('on a terminal: the alternate screen, then each frame over the last without clearing the screen, then the screen back', async () => {
    const {writes, out} = fakeTerminal(true)
    let frames = 0
    let stop: () => void = () => undefined
    const stopped = new Promise<void>((resolve) => (stop = resolve))
    await watchScreen({
      intervalMs: 1,
      out,
      stop: stopped,
      async frame() {
        if (++frames === 3) stop()
        return `frame ${frames}\nline 2\nline 3\nline 4 (below the screen)`
      },
    })
    expect(writes[0].startsWith(`${CSI}?1049h`)).toBe(true)
    const drawn = writes.slice(1, -1)
    expect(drawn).toHaveLength(2)
    for (const frame of drawn) {
      expect(frame.startsWith(`${CSI}H`)).toBe(true)
      expect(frame).not.toContain(`${CSI}2J`)
      expect(frame.endsWith(`${CSI}J`)).toBe(true)
      expect(frame).not.toContain('line 4')
    }
    expect(writes.at(-1)).toContain(`${CSI}?1049l`)
    expect(writes.at(-1)).toContain(`${CSI}?25h`)
  })

  it('piped: frames one after another, no escapes', async () => {
    const {writes, out} = fakeTerminal(false)
    let frames = 0
    let stop: () => void = () => undefined
    const stopped = new Promise<void>((resolve) => (stop = resolve))
    await watchScreen({
      intervalMs: 1,
      out,
      stop: stopped,
      async frame() {
        if (++frames === 3) stop()
        return `frame ${frames}`
      },
    })
    expect(writes).toEqual(['frame 1\n\n', 'frame 2\n\n'])
  })
})
