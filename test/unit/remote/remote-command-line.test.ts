import {spawnSync} from 'node:child_process'
import {chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {forwardedArgv, remoteCommandLine} from '../../../src/remote/remote-command-line.js'

const NASTY = ["it's", 'two words', '$HOME', '`id`', 'a;b', 'line1\nline2', '\\', '"', '', '--name=x y', "'", '*', '-e', '!x', '$(touch /tmp/pwned)']

describe('remoteCommandLine, run by real shells as sshd runs it ($SHELL -c LINE)', () => {
  let home: string
  let bin: string
  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'gpu-cosplay-remote-line-'))
    bin = join(home, 'bin')
    mkdirSync(bin)
    // stands in for gpu-cosplay on the box: prints what it received
    const report = `#!${process.execPath}\nprocess.stdout.write(JSON.stringify({argv: process.argv.slice(2), eof: process.env.GPU_COSPLAY_CANCEL_ON_EOF ?? null, host: process.env.GPU_COSPLAY_HOST ?? null, via: process.argv[1]}))\n`
    writeFileSync(join(bin, 'gpu-cosplay'), report)
    chmodSync(join(bin, 'gpu-cosplay'), 0o755)
  })
  afterAll(() => rmSync(home, {recursive: true, force: true}))

  const run = (shell: string, line: string, extraEnv: Record<string, string> = {}) => {
    const result = spawnSync(shell, ['-c', line], {env: {PATH: `${bin}:/usr/bin:/bin`, HOME: home, GPU_COSPLAY_HOST: 'loop', ...extraEnv}, encoding: 'utf8'})
    expect(result.stderr).toBe('')
    return JSON.parse(result.stdout)
  }

  it.each(['sh', 'bash'])('every argument reaches the program exactly under %s, with EOF-cancel on and --host off', (shell) => {
    const argv = ['up', ...NASTY]
    const got = run(shell, remoteCommandLine(argv, '0.1.0'))
    expect(got).toEqual({argv, eof: '1', host: null, via: join(bin, 'gpu-cosplay')})
  })

  it('prefers the pushed bundle of the same version in the cache', () => {
    const bundle = join(home, 'cache', 'gpu-cosplay', '9.9.9', 'bin')
    mkdirSync(bundle, {recursive: true})
    writeFileSync(
      join(bundle, 'run.js'),
      `process.stdout.write(JSON.stringify({argv: process.argv.slice(2), eof: process.env.GPU_COSPLAY_CANCEL_ON_EOF ?? null, host: process.env.GPU_COSPLAY_HOST ?? null, via: process.argv[1]}))\n`,
    )
    // `node` on the box's PATH
    writeFileSync(join(bin, 'node'), `#!/bin/sh\nexec ${process.execPath} "$@"\n`)
    chmodSync(join(bin, 'node'), 0o755)
    const got = run('sh', remoteCommandLine(['ps', 'a b'], '9.9.9'), {XDG_CACHE_HOME: join(home, 'cache')})
    expect(got).toEqual({argv: ['ps', 'a b'], eof: '1', host: null, via: join(bundle, 'run.js')})
  })

  it('refuses a version string it would have to quote', () => {
    expect(() => remoteCommandLine(['ps'], '1.0; rm -rf /')).toThrow()
  })
})

describe('forwardedArgv', () => {
  it('drops --host in both spellings and --json, and puts --json first', () => {
    expect(forwardedArgv('up', ['3090', '--host', 'ssh://a@b', '--no-container', '--json', '--host=lab'])).toEqual(['up', '--json', '3090', '--no-container'])
  })

  it('keeps everything after -- as it is', () => {
    expect(forwardedArgv('exec', ['s1', '--', 'echo', '--host', 'x', '--json'])).toEqual(['exec', '--json', 's1', '--', 'echo', '--host', 'x', '--json'])
  })

  it('keeps a value that merely looks like --host', () => {
    expect(forwardedArgv('up', ['3090', '--name', '--hostile'])).toEqual(['up', '--json', '3090', '--name', '--hostile'])
  })
})
