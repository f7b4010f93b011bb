import {spawnSync} from 'node:child_process'
import {mkdirSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {cleanupTemps, editBook, type Env, runCli, runJson, Sim} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

const hasSsh = spawnSync('ssh', ['-V']).status === 0
/** the container's sshd host key as `up` records it at its first login */
const HOST_KEY = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBXjYQ5dpTR3ynx2PsTpvmLUh+5pWz16eOu3kD3YdvJ1'

/** A session as `up` records it once its container runs with sshd on `port` (no Docker needed to read it back). */
function sessionWithSsh(env: Env, name: string, port: number): void {
  expect(runJson(['up', '3090', '--no-container', '--name', name], env).exitCode).toBe(0)
  editBook(env, (book) => {
    const session = book.sessions[name]
    session.container = {
      id: 'f'.repeat(64),
      name: `gpu-cosplay-${name}`,
      image: 'gpu-cosplay:test',
      sshPort: port,
      sshHost: '127.0.0.1',
      user: 'dev',
      uid: 1000,
      gid: 1000,
      workspace: null,
      hostKey: HOST_KEY,
    }
    session.journal.push({
      kind: 'start-container',
      state: 'done',
      params: {spec: {sshPort: port, sshBindAddress: '127.0.0.1', binds: [], env: {}}, access: {user: 'dev', uid: 1000, gid: 1000, workspace: null}},
      prior: {},
      result: {sshBindAddress: '127.0.0.1'},
    })
  })
}

function resolvedPort(env: Env, host: string): string | undefined {
  const result = spawnSync('ssh', ['-G', '-F', join(env.HOME!, '.ssh', 'config'), host], {encoding: 'utf8', env: {PATH: process.env.PATH, HOME: env.HOME}})
  expect(result.stderr).toBe('')
  return /^port (\d+)$/m.exec(result.stdout)?.[1]
}

describe('ssh-config', () => {
  it("prints the Host entry on stdout by default, and writes only the file that pins the session's host key", () => {
    const env = Sim.create('h200', 1).env()
    sessionWithSsh(env, 'demo', 40022)
    const result = runCli(['ssh-config', 'demo'], env)
    expect(result.exitCode).toBe(0)
    expect(result.stdout).toMatch(/^Host gpu-cosplay-demo$/m)
    expect(result.stdout).toMatch(/^ {2}Port 40022$/m)
    expect(result.stdout).toMatch(/^ {2}StrictHostKeyChecking yes$/m)
    expect(result.stdout).not.toMatch(/StrictHostKeyChecking no|\/dev\/null/)
    expect(readdirSync(join(env.HOME!, '.ssh'))).toEqual(['gpu-cosplay'])
    expect(readdirSync(join(env.HOME!, '.ssh', 'gpu-cosplay'))).toEqual(['gpu-cosplay-demo.known_hosts'])
    const known = join(env.HOME!, '.ssh', 'gpu-cosplay', 'gpu-cosplay-demo.known_hosts')
    expect(readFileSync(known, 'utf8')).toBe(`gpu-cosplay-demo ${HOST_KEY}\n`)
    expect(result.stdout).toContain(`UserKnownHostsFile ${known}`)
    expect(runJson(['ssh-config', 'demo'], env).json).toMatchObject({hostKey: HOST_KEY, knownHostsFile: known})
  })

  ;(hasSsh ? it : it.skip)('--install twice with a new port in between: OpenSSH (ssh -G) resolves the new port, not a stale one', () => {
    const env = Sim.create('h200', 1).env()
    // the user's own config, with a catch-all block an appended Include would fall into
    mkdirSync(join(env.HOME!, '.ssh'), {recursive: true})
    writeFileSync(join(env.HOME!, '.ssh', 'config'), 'Host *\n  ServerAliveInterval 30\n')
    sessionWithSsh(env, 'demo', 40022)
    const first = runJson(['ssh-config', 'demo', '--install'], env)
    expect(first.exitCode).toBe(0)
    expect(first.json.installed).toMatchObject({includeAdded: true})
    expect(resolvedPort(env, 'gpu-cosplay-demo')).toBe('40022')

    // the session comes back on another port
    editBook(env, (book) => {
      book.sessions.demo.container.sshPort = 40777
      book.sessions.demo.journal.find((e: {kind: string}) => e.kind === 'start-container').params.spec.sshPort = 40777
    })

    const second = runJson(['ssh-config', 'demo', '--install'], env)
    expect(second.exitCode).toBe(0)
    expect(second.json.installed).toMatchObject({includeAdded: false})
    expect(resolvedPort(env, 'gpu-cosplay-demo')).toBe('40777')
    const config = readFileSync(join(env.HOME!, '.ssh', 'config'), 'utf8')
    expect(config.match(/^Include /gm)).toHaveLength(1)
    expect(config).toContain('ServerAliveInterval 30')
  })
})
