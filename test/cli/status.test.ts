import {afterAll, describe, expect, it, jest} from '@jest/globals'
import {existsSync} from 'node:fs'

import {cleanupTemps, runCli, runJson, Sim, stderrLines} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

/** a host with one session on record (no container), then nvidia-smi broken in the way given */
function brokenAfterUp(breakIt: (sim: Sim) => Record<string, string>) {
  const sim = Sim.create('h200', 1)
  const env = sim.env()
  const up = runJson(['up', '3090', '--no-container', '--name', 'kept'], env)
  expect(up.exitCode).toBe(0)
  return {...env, ...breakIt(sim)}
}

describe.each([
  {what: 'missing', code: 'SMI_NOT_FOUND', breakIt: () => ({GPU_COSPLAY_NVIDIA_SMI: '/nonexistent/nvidia-smi'})},
  {what: 'printing garbage', code: 'SMI_UNPARSEABLE', breakIt: (sim: Sim) => (sim.set('garbage', true), {})},
])('status with nvidia-smi $what', ({code, breakIt}) => {
  it('lists the recorded sessions, says what is wrong with the fix on one stderr line, exits 3', () => {
    const env = brokenAfterUp(breakIt)
    const result = runCli(['status'], env)
    expect(result.exitCode).toBe(3)
    expect(result.stdout).toContain('kept')
    const lines = stderrLines(result)
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatch(/^gpu-cosplay: .*nvidia-smi.* \(.+\)$/)
  })

  it(`--json: the sessions and an error object (${code}), exit 3`, () => {
    const env = brokenAfterUp(breakIt)
    const result = runJson(['status'], env)
    expect(result.exitCode).toBe(3)
    expect(result.json.sessions.map((s: {name: string}) => s.name)).toEqual(['kept'])
    expect(result.json.error).toMatchObject({code, exit: 3})
    expect(result.json.error.fix.length).toBeGreaterThan(0)
  })
})

it('status with a working nvidia-smi has no error and exits 0', () => {
  const sim = Sim.create('h200', 1)
  const result = runJson(['status'], sim.env())
  expect(result.exitCode).toBe(0)
  expect(result.json.error).toBeUndefined()
  expect(result.json.gpus).toHaveLength(1)
})

describe('reading commands create nothing', () => {
  it.each([['ps'], ['status'], ['plan', '3090', '--host-gpu', '0'], ['doctor']])(
    '%s on a box where nothing was ever done leaves no state directory',
    (...argv) => {
      const sim = Sim.create('h200', 1)
      const env = sim.env()
      const stateDir = env.GPU_COSPLAY_STATE_DIR!
      expect(existsSync(stateDir)).toBe(false)
      runCli(argv, env)
      expect(existsSync(stateDir)).toBe(false)
    },
  )
})
