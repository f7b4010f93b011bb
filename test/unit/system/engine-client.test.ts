/**
 * A member's side of the boundary against a stand-in engine behind real sudo (the tests run as root, whom sudo lets
 * run anything): the request goes on stdin as one line, frames come back as progress, output and a result, the
 * engine's errors keep their code and exit, and a command's stdin travels as frames.
 */
import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {PassThrough} from 'node:stream'

import type {BoxConfig} from '../../../src/core/box-config.js'
import {askEngine} from '../../../src/system/engine-client.js'

const hasSudo = process.getuid?.() === 0 && spawnSync('sudo', ['-n', 'true']).status === 0
const asRoot = hasSudo ? it : it.skip

let dir: string
beforeEach(() => (dir = mkdtempSync(join(tmpdir(), 'gc-engine-client-'))))
afterEach(() => rmSync(dir, {recursive: true, force: true}))

/** a stand-in engine: `body` is JavaScript run with `request` (the parsed first line) and `send(frame)` in scope */
function fakeEngine(body: string): BoxConfig {
  const engine = join(dir, 'engine')
  const script = `
const readline = require('node:readline')
const lines = readline.createInterface({input: process.stdin})
const send = (frame) => process.stdout.write(JSON.stringify(frame) + '\\n')
let request = null
const later = []
lines.on('line', (line) => { if (request === null) { request = JSON.parse(line); main() } else later.push(JSON.parse(line)) })
function main() { ${body} }
`
  writeFileSync(join(dir, 'engine.cjs'), script)
  writeFileSync(engine, `#!/bin/sh\nexec ${process.execPath} ${join(dir, 'engine.cjs')} "$@"\n`, {mode: 0o755})
  return {version: 1, group: 'root', stateDir: dir, nvidiaSmi: '/bin/false', mpsControl: null, engine, allowContainerSudo: false}
}

describe('askEngine', () => {
  asRoot('sends the request as one line, with no arguments, and returns the result after the progress', async () => {
    const config = fakeEngine(`
      send({t: 'start', text: 'Working'}); send({t: 'say', text: 'argv ' + process.argv.length}); send({t: 'stop', text: 'done'})
      send({t: 'result', value: {echo: request}})`)
    const seen: string[] = []
    const progress = {say: (l: string) => seen.push(`say ${l}`), start: (l: string) => seen.push(`start ${l}`), stop: (l: string) => seen.push(`stop ${l}`)}
    const value = await askEngine(config, {op: 'status', orphans: true}, {progress, cancellable: false})
    expect(value).toEqual({echo: {v: 1, op: 'status', orphans: true}})
    expect(seen).toEqual(['start Working', 'say argv 2', 'stop done'])
  })

  asRoot("turns the engine's error into one with its code and exit", async () => {
    const config = fakeEngine(`send({t: 'error', error: {code: 'NOT_OWNER', message: 'not yours', fix: ['ask alice'], exit: 4}}); process.exitCode = 4`)
    await expect(askEngine(config, {op: 'session', name: 'x'}, {progress: null, cancellable: false})).rejects.toMatchObject({
      code: 'NOT_OWNER',
      exit: 4,
      fix: ['ask alice'],
    })
  })

  asRoot('an engine that ends without an answer is an error of its own', async () => {
    const config = fakeEngine(`process.exit(1)`)
    await expect(askEngine(config, {op: 'hello'}, {progress: null, cancellable: false})).rejects.toMatchObject({code: 'ENGINE_UNREACHABLE', exit: 4})
  })

  asRoot("streams a command's stdin as frames and its output back", async () => {
    const config = fakeEngine(`
      const check = setInterval(() => {
        const end = later.findIndex((f) => f.t === 'stdin-end')
        if (end < 0) return
        clearInterval(check)
        const typed = later.slice(0, end).map((f) => Buffer.from(f.data, 'base64').toString()).join('')
        send({t: 'stdout', data: Buffer.from('out:' + typed).toString('base64')})
        send({t: 'stderr', data: Buffer.from('err').toString('base64')})
        send({t: 'result', value: {exitCode: 3}})
      }, 10)`)
    const stdin = new PassThrough()
    const stdout = new PassThrough()
    const stderr = new PassThrough()
    const asked = askEngine(
      config,
      {op: 'exec', name: null, argv: ['cat'], tty: false, rows: null, cols: null},
      {progress: null, cancellable: false, stdin, stdout, stderr},
    )
    stdin.end('typed text')
    expect(await asked).toEqual({exitCode: 3})
    expect([String(stdout.read()), String(stderr.read())]).toEqual(['out:typed text', 'err'])
  })

  it('refuses a caller who is not in the box group before asking sudo', async () => {
    const config = {...fakeEngine(`send({t: 'result', value: 1})`), group: 'no-such-group-here'}
    await expect(askEngine(config, {op: 'hello'}, {progress: null, cancellable: false})).rejects.toMatchObject({code: 'NOT_IN_GROUP', exit: 4})
  })
})
