/**
 * How many times `up` and `down` call nvidia-smi on an 8-GPU H200 box (issue 9's targets). On a real box each
 * `-q` costs hundreds of ms while the GPU's lock is held. Counts are deterministic: this is not a timed test.
 */

import {cleanupTemps, type Env, MPS_SIM_BIN, runCli, Sim, type SimCall} from '../support/run-cli.js'
import {gpuState} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

const GPU_WIDE = ['-lgc', '-rgc', '-pl', '-pm']

function callsOf(sim: Sim, env: Env, args: readonly string[]): SimCall[] {
  sim.clearCalls()
  const result = runCli(args, env)
  if (result.exitCode !== 0) throw new Error(`${args.join(' ')} failed: ${result.stderr}`)
  return sim.calls()
}

const shown = (calls: readonly SimCall[]) => calls.map((c) => c.argv.join(' '))

describe.each([
  ['classic (clocks and power)', {}],
  ['MPS', {GPU_COSPLAY_MPS_CONTROL: MPS_SIM_BIN}],
])('nvidia-smi calls on an 8x H200, %s', (label, extra: Env) => {
  const sim = Sim.create('h200', 8)
  const env = sim.env(extra)
  const before = gpuState(sim)
  const firstUp = callsOf(sim, env, ['up', '2060', '--no-container', '--name', 'a'])
  const up = callsOf(sim, env, ['up', '2060', '--no-container', '--name', 'b'])
  const downOne = callsOf(sim, env, ['down', 'a'])
  const lastDown = callsOf(sim, env, ['down', 'b'])

  it('up on a GPU with MIG and persistence already on: at most 6 (the slice and its compute instance in one -cgi -C)', () => {
    expect(up.length).toBeLessThanOrEqual(6)
    expect(shown(up).filter((argv) => /-cgi|-cci/.test(argv))).toEqual([expect.stringMatching(/-cgi \d+ -C$/)])
  })

  it('the first up also turns MIG on (one change, nothing read twice): at most 7', () => {
    expect(shown(firstUp)).toContain('-i 0 -mig 1')
    expect(firstUp.length).toBeLessThanOrEqual(7)
    expect(new Set(shown(firstUp)).size).toBe(firstUp.length)
  })

  it('down of one session while another stays: at most 5', () => {
    expect(downOne.length).toBeLessThanOrEqual(5)
  })

  it('the last down, which restores the GPU: at most 7, and the GPU is as found', () => {
    expect(lastDown.length).toBeLessThanOrEqual(7)
    expect(shown(lastDown)).toContain('-i 0 -mig 0')
    expect(gpuState(sim)).toEqual(before)
  })

  it('reads only the GPU at hand after the first listing', () => {
    const reads = [...firstUp, ...up, ...downOne, ...lastDown]
      .map((c) => c.argv)
      .filter((argv) => argv[0] === '-q' || argv.includes('-lgip') || argv.includes('-lgi'))
    for (const argv of reads) expect(argv).toContain('-i')
  })

  if (label === 'MPS') {
    it('with MPS, no GPU-wide clock or power call at all', () => {
      const all = [...firstUp, ...up, ...downOne, ...lastDown].map((c) => c.argv)
      expect(all.filter((argv) => argv.some((a) => GPU_WIDE.includes(a)))).toEqual([])
    })
  }
})
