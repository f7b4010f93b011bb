import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {cleanupTemps, runCli, runJson, Sim} from './support/run-cli.js'
import {killDuring} from './support/crash-points.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

describe('ps', () => {
  it('shows a session whose up was killed half-way as crashed, with the hint to run recover', async () => {
    const sim = Sim.create('h200', 1)
    const env = sim.env()
    await killDuring(sim, env, ['up', '3090', '--no-container', '--name', 'victim'], ['-cgi'], 'hang')

    const listed = runJson(['ps'], env)
    expect(listed.exitCode).toBe(0)
    expect(listed.json).toEqual([expect.objectContaining({name: 'victim', phase: 'starting', crashed: true})])
    const text = runCli(['ps'], env)
    expect(text.stdout).toMatch(/victim.*crashed/)
    expect(text.stdout).toContain('gpu-cosplay recover')
    // the slice was never made: say so, not "GI null"
    expect(text.stdout).toMatch(/victim.*1g\.35gb \(not created\)/)
    for (const command of [['ps'], ['status']]) {
      const shown = runCli(command, env).stdout
      expect({command, shown}).toEqual({command, shown: expect.not.stringMatching(/\bnull\b|undefined|NaN/)})
    }
  })

  it('a healthy session is not crashed, and there is no hint', () => {
    const sim = Sim.create('h200', 1)
    const env = sim.env()
    expect(runJson(['up', '3090', '--no-container', '--name', 'fine'], env).exitCode).toBe(0)
    expect(runJson(['ps'], env).json).toEqual([expect.objectContaining({name: 'fine', phase: 'active', crashed: false})])
    expect(runCli(['ps'], env).stdout).not.toContain('recover')
  })
})

describe('ls --arch', () => {
  it.each(['Ada', 'ADA', 'ada'])('--arch %s is accepted whatever its case', (arch) => {
    const result = runJson<{arch: string}[]>(['ls', '--arch', arch])
    expect(result.exitCode).toBe(0)
    expect(result.json.length).toBeGreaterThan(0)
    expect(result.json.every((t) => t.arch === 'ada')).toBe(true)
  })
})
