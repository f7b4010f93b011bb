/**
 * The Host entry ssh-config --host writes, read back by the real OpenSSH client (ssh -G), and the lines it pins
 * the container's host key with.
 */
import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from '@jest/globals'

import {configPath, connectHints, isPublicKeyLine, knownHostsLine, sshConfigEntryViaJump} from '../../../src/container/connect-hints.js'
import type {SessionContainer} from '../../../src/container/session-container.js'

const hasSsh = spawnSync('ssh', ['-V']).status === 0
const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-hints-'))
afterAll(() => rmSync(dir, {recursive: true, force: true}))

/** What OpenSSH resolves for alias from this entry alone (ssh -G prints lower-case keys). */
function resolved(entry: string, alias: string): Record<string, string> {
  const file = join(dir, `config-${Math.random().toString(36).slice(2)}`)
  writeFileSync(file, `${entry}\n`)
  const r = spawnSync('ssh', ['-G', '-F', file, alias], {encoding: 'utf8'})
  expect(r.stderr).toBe('')
  const out: Record<string, string> = {}
  for (const line of r.stdout.split('\n')) {
    const at = line.indexOf(' ')
    if (at > 0 && !(line.slice(0, at) in out)) out[line.slice(0, at)] = line.slice(at + 1)
  }
  return out
}

const entry = {
  alias: 'gpu-cosplay-gpubox-alice-rtx_3090',
  hostName: '127.0.0.1',
  port: 32771,
  user: 'alice',
  identityFile: '/home/al ice/.ssh/gpu-cosplay/client_ed25519',
  proxyJump: 'alice@gpubox.example:2222',
  knownHostsFile: '/home/al ice/100%/gpu-cosplay-gpubox-alice-rtx_3090.known_hosts',
}

describe('sshConfigEntryViaJump', () => {
  ;(hasSsh ? it : it.skip)('OpenSSH reads the box as ProxyJump, the loopback sshd, the pinned-key file, and strict checking', () => {
    const got = resolved(sshConfigEntryViaJump(entry), entry.alias)
    expect(got).toMatchObject({
      hostname: '127.0.0.1',
      port: '32771',
      user: 'alice',
      proxyjump: 'alice@gpubox.example:2222',
      hostkeyalias: entry.alias,
      stricthostkeychecking: 'true',
      identitiesonly: 'yes',
    })
    // a space survives the quotes and a % is not taken for a token
    expect(got.identityfile).toBe(entry.identityFile)
    expect(got.userknownhostsfile).toBe(entry.knownHostsFile)
  })

  it('puts one key line under the alias, comment dropped', () => {
    expect(knownHostsLine('gpu-cosplay-b-s', 'ssh-ed25519 AAAAC3Nza comment here\n')).toBe('gpu-cosplay-b-s ssh-ed25519 AAAAC3Nza')
  })

  it('refuses a path ssh_config cannot hold', () => {
    expect(() => configPath('/tmp/a"b')).toThrow(expect.objectContaining({code: 'BAD_PATH'}))
    expect(configPath('/tmp/100%')).toBe('/tmp/100%%')
  })
})

describe('a session on this machine', () => {
  const container = {session: 'alice-rtx_3090', sshHost: '127.0.0.1', sshPort: 32772, user: 'alice'} as SessionContainer
  const knownHosts = '/home/al ice/.ssh/gpu-cosplay/gpu-cosplay-alice-rtx_3090.known_hosts'
  const hints = connectHints(container, '/home/al ice/.ssh/id_ed25519', knownHosts)

  ;(hasSsh ? it : it.skip)('its Host entry pins the host key under the alias, strictly, in a file of its own', () => {
    const got = resolved(hints.sshConfig!, 'gpu-cosplay-alice-rtx_3090')
    expect(got).toMatchObject({hostname: '127.0.0.1', port: '32772', user: 'alice', hostkeyalias: 'gpu-cosplay-alice-rtx_3090', stricthostkeychecking: 'true'})
    expect(got.userknownhostsfile).toBe(knownHosts)
    expect(got.identityfile).toBe('/home/al ice/.ssh/id_ed25519')
  })

  it('the plain ssh line checks the same pinned key, its words quoted for a shell', () => {
    expect(hints.ssh).toBe(
      "ssh -o HostKeyAlias=gpu-cosplay-alice-rtx_3090 -o 'UserKnownHostsFile=/home/al ice/.ssh/gpu-cosplay/gpu-cosplay-alice-rtx_3090.known_hosts' -o StrictHostKeyChecking=yes -p 32772 -i '/home/al ice/.ssh/id_ed25519' alice@127.0.0.1",
    )
    expect(hints.sshConfig).not.toMatch(/StrictHostKeyChecking no|\/dev\/null/)
  })

  it('without sshd (or a pinned key) there is nothing to ssh to', () => {
    expect(connectHints({...container, sshPort: null}, '/k', null)).toEqual({command: 'gpu-cosplay ssh alice-rtx_3090', ssh: null, sshConfig: null})
  })
})

describe('isPublicKeyLine', () => {
  it.each([
    ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG4= gpu-cosplay client box', true],
    ['ecdsa-sha2-nistp256 AAAAE2VjZHNh', true],
    ['ssh-ed25519 AAAAC3Nza\nssh-ed25519 AAAAother', false],
    ['command="rm -rf /" ssh-ed25519 AAAAC3Nza', false],
    ['-----BEGIN OPENSSH PRIVATE KEY-----', false],
    ['', false],
  ])('%j -> %s', (line, ok) => {
    expect(isPublicKeyLine(line)).toBe(ok)
  })
})
