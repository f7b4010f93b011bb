import {afterAll, afterEach, describe, expect, it, jest} from '@jest/globals'
import {userInfo} from 'node:os'

import {cleanupTemps, runCli, runJson, Sim} from './support/run-cli.js'
import {mutatingCalls} from './support/run-cli-async.js'
import {hasTmux, Terminal} from './support/tmux.js'

jest.setTimeout(90_000)
afterAll(cleanupTemps)

const me = userInfo().username
// a background colour (SGR 41-47), whichever way tmux writes it back
const ESC = '\u001B'
const BACKGROUND = new RegExp(`${ESC}\\[(?:[0-9;]*;)?4[1-7](?:;[0-9;]*)?m`)

/** the GPUs' part of the screen: the lines above the session table (the notes under it may wrap) */
function pictureOf(screen: string): string[] {
  const lines = screen.split('\n')
  return lines.slice(
    0,
    lines.findIndex((line) => line.startsWith('NAME ')),
  )
}

/** GPU 0 (MIG on): t4 on slice 0, a10 on 4-5, 3090 on 6-7, slices 1-3 free; GPU 1: MIG off, nobody */
function boxWithThreeSessions() {
  const sim = Sim.create('h200', 2)
  const env = sim.env()
  for (const [target, name] of [
    ['3090', 's1'],
    ['a10', 's2'],
    ['t4', 's3'],
  ]) {
    const up = runJson(['up', target, '--no-container', '--name', name, '--host-gpu', '0'], env)
    expect(up.exitCode).toBe(0)
  }
  return {sim, env}
}

describe('status: the box picture', () => {
  const {env} = boxWithThreeSessions()

  it('--json adds the placement: the memory slices each GI occupies, what is free, the largest free profile', () => {
    const {json} = runJson(['status'], env)
    const byName = Object.fromEntries(json.sessions.map((s: any) => [s.name, s]))
    expect(byName.s3.placement).toEqual({start: 0, size: 1})
    expect(byName.s2.placement).toEqual({start: 4, size: 2})
    expect(byName.s1.placement).toEqual({start: 6, size: 2})
    expect(byName.s1.shaping).toMatchObject({smCount: 26, sliceSmCount: 26, vramCapMiB: 24_576})
    expect(json.gpus[0]).toMatchObject({memorySlices: 8, freeMemorySlices: [1, 2, 3], largestFreeProfile: '2g.35gb', powerLimitW: 350})
    expect(json.gpus[0].instances.map((i: any) => i.placement)).toContainEqual({start: 4, size: 2})
    expect(json.gpus[1]).toMatchObject({migEnabled: false, memorySlices: null, freeMemorySlices: [], largestFreeProfile: null})
  })

  it('piped: plain ASCII, one strip per GPU, 80 columns', () => {
    const {stdout, exitCode} = runCli(['status'], {...env, NO_COLOR: undefined})
    expect(exitCode).toBe(0)
    expect(stdout).not.toContain(ESC)
    expect(stdout).toMatch(/^ {2}\| A {6}\| free {3}\| free {3}\| free {3}\| B [^|]+\| C [^|]+\|$/m)
    expect(stdout).toContain('free: slices 1-3; largest free profile: 2g.35gb')
    expect(stdout).toMatch(/^ {2}\| free \(whole GPU, MIG off\) +\|$/m)
    expect(pictureOf(stdout).every((line) => line.length <= 80)).toBe(true)
  })

  const terminal = hasTmux ? describe : describe.skip
  terminal('in a terminal (tmux)', () => {
    let open: Terminal | undefined
    afterEach(() => open?.kill())

    it.each([80, 120])('at %i columns: every slice in its place, the sessions under it, nothing wider than the screen', async (cols) => {
      open = Terminal.start(['status'], {...env, NO_COLOR: undefined}, {cols, rows: 50})
      const screen = await open.waitFor((s) => s.includes('[exit 0]'))
      const lines = pictureOf(screen)
      expect(lines.every((line) => line.length <= cols)).toBe(true)
      const strip = lines.find((line) => line.startsWith('  | A'))!
      // eight slices share the width: one slice's cell is (cols - 3) / 8 wide
      const cell = Math.floor((cols - 3) / 8)
      expect(strip.length).toBe(3 + 8 * cell)
      expect(strip.split('|').map((c) => c.trim())).toEqual([
        '',
        cols >= 120 ? `A ${me}/t4` : 'A',
        'free',
        'free',
        'free',
        `B ${me}/a10`,
        expect.stringMatching(/^C /),
        '',
      ])
      if (cols >= 120) expect(strip).toContain(`C ${me}/rtx_3090`)
      expect(screen).toMatch(new RegExp(`A +s3 +${me} +t4 +1g\\.18gb GI \\d+ slice 0 +active`))
      // the card's VRAM, and the limit the driver holds the session to (here its MIG slice: no MPS on this host)
      expect(screen).toMatch(/26 of 26 SMs, VRAM 24\.0 GiB, limit 32\.5 GiB/)
      expect(screen).toMatch(/shares clock unlocked, power 350 W/)
      // colour on a terminal: each holder has a background of its own
      const coloured = open.screen({escapes: true})
      expect(coloured).toMatch(BACKGROUND)
    })

    it('NO_COLOR: the same picture without a colour', async () => {
      open = Terminal.start(['status'], {...env, NO_COLOR: '1'}, {cols: 80, rows: 50})
      await open.waitFor((s) => s.includes('[exit 0]'))
      expect(open.screen({escapes: true})).not.toMatch(BACKGROUND)
    })
  })
})

const inTerminal = hasTmux ? describe : describe.skip
inTerminal('status --watch in a terminal (tmux)', () => {
  let open: Terminal | undefined
  afterEach(() => open?.kill())

  it('redraws in place when a session appears; Ctrl-C gives the shell its screen back; the GPU is only read', async () => {
    const sim = Sim.create('h200', 1)
    const env = {...sim.env(), NO_COLOR: undefined}
    open = Terminal.start(['status', '--watch', '--interval', '0.3'], env, {cols: 100, rows: 40})
    let screen = await open.waitFor((s) => s.includes('free (whole GPU, MIG off)'))
    expect(screen).toMatch(/^gpu-cosplay status, every 0\.3s: .*\(Ctrl-C quits\)$/m)
    expect(screen).toContain('No sessions.')

    expect(runJson(['up', 't4', '--no-container', '--name', 'w1'], env).exitCode).toBe(0)
    screen = await open.waitFor((s) => s.includes(`| A ${me}/t4`))
    // drawn over the last frame, not below it: one title, one GPU, nothing of the earlier frame left
    expect(screen.match(/gpu-cosplay status, every/g)).toHaveLength(1)
    expect(screen.match(/^GPU 0:/gm)).toHaveLength(1)
    expect(screen).not.toContain('No sessions.')
    expect(screen).not.toContain('MIG off')

    sim.clearCalls()
    await new Promise((r) => setTimeout(r, 1000))
    expect(sim.calls().length).toBeGreaterThan(0)
    expect(mutatingCalls(sim)).toEqual([])

    open.sendKeys('C-c')
    screen = await open.waitFor((s) => s.includes('[exit 0]'))
    // the alternate screen is gone: the shell's own screen holds nothing the watch drew
    expect(screen).not.toContain('GPU 0')
    expect(screen.trim()).toBe('[exit 0]')
    expect(runJson(['down', 'w1'], env).exitCode).toBe(0)
  })
})
