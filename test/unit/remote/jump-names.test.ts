/** How ssh-config --host names the box: as ProxyJump (what OpenSSH takes) and inside a Host name or file name. */
import {mkdtempSync, rmSync, statSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from '@jest/globals'

import {loadOrCreateClientKey} from '../../../src/remote/client-key.js'
import {hostSlug, parseHostUrl, proxyJumpFor} from '../../../src/remote/host-url.js'
import {resolveHosts} from '../../../src/remote/resolve-hosts.js'

const noHostsFile = () => ({version: 1 as const, hosts: {}})

describe('proxyJumpFor and hostSlug', () => {
  it.each([
    ['ssh://alice@gpu-box:2222', 'alice@gpu-box:2222', 'gpu-box-2222'],
    ['alice@10.0.0.5', 'alice@10.0.0.5', '10.0.0.5'],
    ['ssh://[fe80::1]:22', '[fe80::1]:22', 'fe80__1-22'],
    // an ssh_config alias stays one: OpenSSH applies its HostName, User, Port and ProxyJump on the jump too
    ['gpubox', 'gpubox', 'gpubox'],
  ])('%s -> ProxyJump %s, slug %s', (spec, jump, slug) => {
    const [address] = resolveHosts(spec, noHostsFile)
    expect(proxyJumpFor(address)).toBe(jump)
    expect(hostSlug(address)).toBe(slug)
  })

  it('a hosts.yaml name jumps to its URL, which OpenSSH does not know by that name', () => {
    const [address] = resolveHosts('lab', () => ({version: 1, hosts: {lab: {url: 'ssh://bob@lab.example:2200'}}}) as never)
    expect(proxyJumpFor(address)).toBe('bob@lab.example:2200')
    expect(parseHostUrl('ssh://bob@lab.example').port).toBeNull()
  })
})

describe('loadOrCreateClientKey', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-client-key-'))
  afterAll(() => rmSync(dir, {recursive: true, force: true}))

  it('makes one ed25519 pair, the private half 0600 in a 0700 folder, and gives the same one back', () => {
    const first = loadOrCreateClientKey(dir)
    expect(first.publicKey).toMatch(/^ssh-ed25519 \S+ gpu-cosplay client /)
    expect(first.privateKeyPath).toBe(join(dir, 'gpu-cosplay', 'client_ed25519'))
    expect(statSync(first.privateKeyPath).mode & 0o777).toBe(0o600)
    expect(statSync(join(dir, 'gpu-cosplay')).mode & 0o777).toBe(0o700)
    expect(loadOrCreateClientKey(dir)).toEqual(first)
  })
})
