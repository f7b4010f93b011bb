import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {baseEnv, cleanupTemps, type CliResult, runCli, runJson, Sim, stderrLines, tempDir} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

type Case = {
  name: string
  args: string[]
  exit: number
  code: string
  /** prepares the simulator (an 8-GPU H200 with MIG on for GPU 0 unless said otherwise) */
  sim?: (sim: Sim) => void
  env?: (sim: Sim) => Record<string, string>
}

const CASES: Case[] = [
  {name: 'unknown GPU', args: ['info', 'voodoo5'], exit: 2, code: 'UNKNOWN_GPU'},
  {name: 'unknown GPU in plan', args: ['plan', 'voodoo5', '--host-gpu', '0'], exit: 2, code: 'UNKNOWN_GPU'},
  {name: '--match foo', args: ['plan', '3090', '--match', 'foo'], exit: 2, code: 'BAD_USAGE'},
  {name: '--host-gpu -1', args: ['plan', '3090', '--host-gpu', '-1'], exit: 2, code: 'BAD_USAGE'},
  {name: '--host-gpu abc', args: ['plan', '3090', '--host-gpu', 'abc'], exit: 2, code: 'BAD_USAGE'},
  {name: '--on unknown', args: ['plan', '3090', '--on', 'voodoo5'], exit: 2, code: 'UNKNOWN_HOST_MODEL'},
  {name: '--on with --host-gpu', args: ['plan', '3090', '--on', 'h200', '--host-gpu', '0'], exit: 2, code: 'BAD_USAGE'},
  {name: 'missing argument', args: ['plan'], exit: 2, code: 'BAD_USAGE'},
  {name: 'unknown flag', args: ['ls', '--bogus'], exit: 2, code: 'BAD_USAGE'},
  {name: '--arch foo', args: ['ls', '--arch', 'foo'], exit: 2, code: 'BAD_USAGE'},
  {name: 'GPU index out of range', args: ['plan', '3090', '--host-gpu', '8'], exit: 2, code: 'GPU_INDEX_OUT_OF_RANGE'},
  {
    name: 'malformed user catalog (YAML syntax)',
    args: ['info', '3090'],
    exit: 2,
    code: 'CATALOG_INVALID',
    env: () => ({GPU_COSPLAY_CATALOG_DIR: catalogDir('version: 1\ntargets:\n  - key: [oops\n')}),
  },
  {
    name: 'malformed user catalog (schema)',
    args: ['plan', '3090', '--on', 'h200'],
    exit: 2,
    code: 'CATALOG_INVALID',
    env: () => ({GPU_COSPLAY_CATALOG_DIR: catalogDir('version: 1\ntargets:\n  - key: foo\n    name: Foo\n')}),
  },
  {name: 'nvidia-smi missing', args: ['plan', '3090'], exit: 3, code: 'SMI_NOT_FOUND', env: () => ({GPU_COSPLAY_NVIDIA_SMI: '/nonexistent/nvidia-smi'})},
  {name: 'nvidia-smi not executable', args: ['plan', '3090'], exit: 3, code: 'SMI_NOT_EXECUTABLE', env: () => ({GPU_COSPLAY_NVIDIA_SMI: notExecutable()})},
  {name: 'nvidia-smi failing', args: ['plan', '3090'], exit: 3, code: 'SMI_FAILED', sim: (s) => void s.failNext({match: '-q'})},
  {name: 'nvidia-smi failing on mig -lgi', args: ['plan', '3090'], exit: 3, code: 'SMI_FAILED', sim: (s) => void s.failNext({match: '-lgi'})},
  {name: 'nvidia-smi printing garbage', args: ['plan', '3090'], exit: 3, code: 'SMI_UNPARSEABLE', sim: (s) => void s.set('garbage', true)},
  {name: 'nvidia-smi printing binary to plan', args: ['plan', '3090'], exit: 3, code: 'SMI_UNPARSEABLE', sim: (s) => void s.set('garbage', 'binary')},
  {name: 'unknown command', args: ['plna', '3090'], exit: 2, code: 'UNKNOWN_COMMAND'},
  {name: 'extra argument to a command without arguments', args: ['ps', 'extra-arg'], exit: 2, code: 'BAD_USAGE'},
  {name: 'help for an unknown command', args: ['help', 'plna'], exit: 2, code: 'UNKNOWN_COMMAND'},
  {name: 'a GPU name with a newline', args: ['info', 'a\nb'], exit: 2, code: 'UNKNOWN_GPU'},
  {name: 'a session name with terminal escapes', args: ['ssh-config', 'x\u001b[31m\u0007\u009b'], exit: 2, code: 'UNKNOWN_SESSION'},
  {name: 'no GPU instance fits', args: ['plan', 'a100-80g'], exit: 3, code: 'MIG_NO_FREE_SLOT', sim: (s) => void s.createInstances(0, [19])},
  {name: '--workspace not a folder', args: ['up', '3090', '--workspace', '/nonexistent/ws'], exit: 2, code: 'BAD_WORKSPACE'},
  {name: 'a Slurm node name with a newline', args: ['plan', 't4', '--on', 'h200', '-o', 'slurm', '--node', 'gpu\n/bin/sh'], exit: 2, code: 'BAD_NODE_NAME'},
]

function notExecutable(): string {
  const path = join(tempDir(), 'nvidia-smi')
  writeFileSync(path, '#!/bin/sh\necho never\n', {mode: 0o644})
  return path
}

function catalogDir(text: string): string {
  const dir = tempDir()
  mkdirSync(dir, {recursive: true})
  writeFileSync(join(dir, 'broken.yaml'), text)
  return dir
}

function expectOneCleanLine(result: CliResult): void {
  const lines = stderrLines(result)
  expect(lines).toHaveLength(1)
  expect(lines[0]).toMatch(/^gpu-cosplay: \S/)
  expect(result.stderr).not.toContain('    at ')
  expect(result.stdout).not.toContain('    at ')
}

describe.each(CASES)('$name', (c) => {
  const prepare = () => {
    const sim = Sim.create('h200', 8).enableMig(0)
    c.sim?.(sim)
    return {sim, env: sim.env(c.env?.(sim) ?? {}), before: sim.stateText()}
  }

  it(`exits ${c.exit} with one line on stderr and no stack trace`, () => {
    const {sim, env, before} = prepare()
    const result = runCli(c.args, env)
    expect({exit: result.exitCode, output: result.stdout + result.stderr}).toEqual({exit: c.exit, output: expect.any(String)})
    expectOneCleanLine(result)
    expect(result.stdout).toBe('')
    expect(sim.stateText()).toBe(before)
  })

  it(`--json prints {error: {code: ${c.code}, exit: ${c.exit}}} on stdout`, () => {
    const {sim, env, before} = prepare()
    const mark = sim.calls().length
    const result = runCli([...c.args, '--json'], env)
    expect({exit: result.exitCode, output: result.stdout + result.stderr}).toEqual({exit: c.exit, output: expect.any(String)})
    const json = JSON.parse(result.stdout)
    expect(Object.keys(json)).toEqual(['error'])
    expect(json.error).toMatchObject({code: c.code, exit: c.exit})
    expect(typeof json.error.message).toBe('string')
    expect(json.error.message).not.toContain('\n')
    expect(Array.isArray(json.error.fix)).toBe(true)
    expect(result.stdout).not.toContain('    at ')
    expect(sim.stateText()).toBe(before)
    expect(
      sim
        .calls()
        .slice(mark)
        .filter((call) => call.argv.some((a) => /^-(cgi|cci|dci|dgi|mig|lgc|rgc|pl|pm)$/.test(a))),
    ).toEqual([])
  })
})

describe('specific fixes', () => {
  it('nvidia-smi missing suggests --on', () => {
    const result = runCli(['plan', '3090', '--json'], baseEnv({GPU_COSPLAY_NVIDIA_SMI: '/nonexistent/nvidia-smi'}))
    expect(JSON.parse(result.stdout).error.fix.join(' ')).toContain('--on')
  })

  it('garbage from nvidia-smi never reaches the terminal as control characters', () => {
    const sim = Sim.create('h200', 1).set('garbage', true)
    const result = runCli(['plan', '3090'], sim.env())
    // eslint-disable-next-line no-control-regex
    expect(result.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f]/)
  })

  it.each([true, 'binary'])('up with nvidia-smi -L printing garbage (%s): SMI_UNPARSEABLE like plan, not "no GPU 0", and nothing changes', (garbage) => {
    const sim = Sim.create('h200', 1).set('garbage', garbage)
    const before = sim.stateText()
    const {exitCode, json} = runJson(['up', 't4', '--no-container'], sim.env())
    expect({exitCode, error: json.error}).toMatchObject({exitCode: 3, error: {code: 'SMI_UNPARSEABLE', exit: 3}})
    expect(json.error.message).toMatch(/^nvidia-smi -L printed something this version cannot read: /)
    const text = runCli(['up', 't4', '--no-container'], sim.env())
    expect(text.exitCode).toBe(3)
    // up's progress line, then the error on one line
    expect(stderrLines(text).filter((line) => !/^Applying /.test(line))).toEqual([`gpu-cosplay: ${json.error.message} (${json.error.fix.join('; ')})`])
    expect(sim.calls().filter((call) => call.argv.some((a) => /^-(cgi|cci|dci|dgi|mig|lgc|rgc|pl|pm)$/.test(a)))).toEqual([])
    expect(sim.stateText()).toBe(before)
  })

  it.each([
    ['up', ['up', 't4', '--no-container']],
    ['plan', ['plan', '3090']],
  ])('%s: binary from nvidia-smi is quoted as a short, printable excerpt that says how long the output was', (_command, args) => {
    const sim = Sim.create('h200', 1).set('garbage', 'binary')
    const {json} = runJson(args, sim.env())
    expect(json.error).toMatchObject({code: 'SMI_UNPARSEABLE', exit: 3})
    expect(json.error.message).toMatch(/\b4094 bytes\b/)
    expect(json.error.message.length).toBeLessThan(400)
    // no control character, escaped or not, and no stand-in for invalid UTF-8
    // eslint-disable-next-line no-control-regex
    expect(json.error.message).not.toMatch(/[\u0000-\u001f\u007f-\u009f\ufffd]|\\e|\\x[0-9a-f]{2}/)
    // eslint-disable-next-line no-control-regex
    expect(runCli(args, sim.env()).stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\ufffd]/)
  })

  it('an unknown command suggests the closest one, without gluing its arguments to the name', () => {
    const result = runCli(['plna', '3090', '--json'], baseEnv())
    const {error} = JSON.parse(result.stdout)
    expect(error.message).toContain('plna')
    expect(error.message).not.toContain('3090')
    expect(error.fix.join(' ')).toContain('gpu-cosplay plan')
  })

  it('ps extra-arg is an unexpected argument to ps, not a command "ps:extra-arg"', () => {
    const result = runCli(['ps', 'extra-arg'], baseEnv())
    expect(result.stderr).toContain('extra-arg')
    expect(result.stderr).not.toMatch(/ps:extra-arg|ps extra-arg/)
  })

  it.each([
    ['info', 'a\nb'],
    ['verify', 'x\u001b[31m\u0007'],
    ['info', 'c1\u009b31m'],
  ])('%s with control characters in its argument: escaped, one line, no raw control character', (command, name) => {
    for (const json of [false, true]) {
      const result = runCli(json ? [command, name, '--json'] : [command, name], baseEnv())
      expect(result.exitCode).toBe(2)
      // eslint-disable-next-line no-control-regex
      expect(result.stdout + result.stderr).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/)
      const message = json ? JSON.parse(result.stdout).error.message : result.stderr
      expect(message).toMatch(/\\n|\\e|\\x9b/)
    }
  })

  it('an unknown GPU lists close names', () => {
    const result = runCli(['info', '3090 tie', '--json'], baseEnv())
    expect(result.exitCode).toBe(2)
    expect(JSON.stringify(JSON.parse(result.stdout).error)).toMatch(/3090/)
  })
})
