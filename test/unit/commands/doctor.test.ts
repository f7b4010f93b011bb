import {readdirSync, readFileSync} from 'node:fs'

import {describe, expect, it} from '@jest/globals'

import {privilegesCheck} from '../../../src/client/doctor-checks.js'

import {usageLine} from '../../../src/core/failure.js'
import {checkSmiPrivileges} from '../../../src/host/privileges.js'
import {ScriptedExecutor} from '../support/scripted-executor.js'

describe('checkSmiPrivileges', () => {
  it('root needs no sudo and runs nothing', async () => {
    const executor = new ScriptedExecutor(new Error('must not run'))
    expect((await checkSmiPrivileges(executor, '/usr/bin/nvidia-smi', 0)).mode).toBe('root')
    expect(executor.argvs).toEqual([])
  })

  it('asks sudo -n -l for the exact nvidia-smi path', async () => {
    const executor = new ScriptedExecutor({stdout: '/usr/bin/nvidia-smi\n'})
    const result = await checkSmiPrivileges(executor, '/usr/bin/nvidia-smi', 1000)
    expect(result.mode).toBe('sudo')
    expect(executor.argvs).toEqual([['sudo', '-n', '-l', '/usr/bin/nvidia-smi']])
  })

  it.each([
    ['sudo wants a password', {exitCode: 1, stderr: 'sudo: a password is required\n'}, /password/],
    ['sudo refuses the command', {exitCode: 1, stderr: ''}, /does not allow/],
    ['sudo hangs', {exitCode: 124, timedOut: true}, /did not answer/],
  ])('%s: none', async (_name, answer, detail) => {
    const result = await checkSmiPrivileges(new ScriptedExecutor(answer), '/usr/bin/nvidia-smi', 1000)
    expect(result.mode).toBe('none')
    expect(result.detail).toMatch(detail)
    expect(result.detail).not.toContain('\n')
  })

  it('sudo not installed: none', async () => {
    const missing = Object.assign(new Error('spawn sudo ENOENT'), {code: 'ENOENT'})
    const result = await checkSmiPrivileges(new ScriptedExecutor(missing), 'nvidia-smi', 1000)
    expect(result).toEqual({mode: 'none', detail: expect.stringMatching(/sudo is not installed/)})
  })
})

describe('usageLine (oclif parse errors as one line)', () => {
  it.each([
    [
      'Parsing --host-gpu \n\tExpected an integer greater than or equal to 0 but received: -1\nSee more help with --help',
      '--host-gpu: Expected an integer greater than or equal to 0 but received: -1',
    ],
    [
      'The following errors occurred:\n  --host-gpu=0 cannot also be provided when using --on\n  --on=h200 cannot also be provided when using --host-gpu\nSee more help with --help',
      '--host-gpu=0 cannot also be provided when using --on',
    ],
    ['Missing 1 required arg:\ngpu  target GPU, e.g. 3090, t4, a100-80g\nSee more help with --help', 'Missing 1 required arg: gpu'],
    ['Nonexistent flag: --bogus\nSee more help with --help', 'Nonexistent flag: --bogus'],
    ['Expected --match=foo to be one of: balanced, fp32', 'Expected --match=foo to be one of: balanced, fp32'],
  ])('%j', (message, line) => {
    expect(usageLine(message)).toBe(line)
  })
})

describe('privilegesCheck: GPU_COSPLAY_SUDO is gone (up and down use passwordless sudo by themselves)', () => {
  it('passwordless sudo is enough: ok, nothing to export', () => {
    const check = privilegesCheck({mode: 'sudo', detail: 'dev may run /usr/bin/nvidia-smi with passwordless sudo'}, '/usr/bin/nvidia-smi')
    expect(check).toMatchObject({status: 'ok', fix: []})
    expect(JSON.stringify(check)).not.toContain('GPU_COSPLAY_SUDO')
  })

  it('no root and no sudo: the fix names root or a sudoers line, not a variable', () => {
    const check = privilegesCheck({mode: 'none', detail: 'dev is not root and sudo wants a password'}, '/usr/bin/nvidia-smi')
    expect(check.status).toBe('missing')
    expect(check.fix.join(' ')).toContain('NOPASSWD: /usr/bin/nvidia-smi')
    expect(JSON.stringify(check)).not.toContain('GPU_COSPLAY_SUDO')
  })

  it('no message outside the lead-owned files recommends GPU_COSPLAY_SUDO', () => {
    const offenders = sourceFiles('src')
      .filter((file) => !file.startsWith('src/apply/') && file !== 'src/commands/support/resolve-plan-host.ts')
      .concat([
        'README.md',
        ...readdirSync('docs')
          .filter((name) => name.endsWith('.md'))
          .map((name) => `docs/${name}`),
      ])
      .filter((file) => readFileSync(file, 'utf8').includes('GPU_COSPLAY_SUDO'))
    expect(offenders).toEqual([])
  })
})

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((entry) => {
    const path = `${dir}/${entry.name}`
    return entry.isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : []
  })
}
