import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {baseEnv, cleanupTemps, runCli} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

describe('help and version', () => {
  it.each([[['help']], [['-h']], [['--help']], [[]]])('%j lists the commands', (args) => {
    const result = runCli(args, baseEnv())
    expect({exit: result.exitCode, stderr: result.stderr}).toEqual({exit: 0, stderr: ''})
    expect(result.stdout).toMatch(/^COMMANDS$/m)
    for (const id of ['plan', 'up', 'down', 'status']) expect(result.stdout).toMatch(new RegExp(`^  ${id}\\s`, 'm'))
  })

  it.each([[['help', 'plan']], [['plan', '-h']], [['plan', '--help']], [['plan', '3090', '-h']]])('%j shows the help of plan', (args) => {
    const result = runCli(args, baseEnv())
    expect({exit: result.exitCode, stderr: result.stderr}).toEqual({exit: 0, stderr: ''})
    expect(result.stdout).toContain('$ gpu-cosplay plan GPU')
    expect(result.stdout).toContain('--match')
  })

  it.each([[['version']], [['-v']], [['--version']]])('%j prints the version', (args) => {
    const result = runCli(args, baseEnv())
    expect(result.exitCode).toBe(0)
    expect(result.stdout.trim()).toMatch(/^gpu-cosplay\/\d+\.\d+\.\d+ /)
  })

  it('version --json', () => {
    const result = runCli(['version', '--json'], baseEnv())
    expect(JSON.parse(result.stdout)).toMatchObject({version: expect.stringMatching(/^\d+\.\d+\.\d+/)})
  })
})
