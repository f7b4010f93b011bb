import {createHmac, randomBytes} from 'node:crypto'

import {keyTypeOf} from '../../../src/core/ssh-connection.js'
import {checkHostKey, knownHostsName} from '../../../src/remote/known-hosts.js'

function blob(type: string, fill: number): Buffer {
  const name = Buffer.from(type)
  const key = Buffer.alloc(32, fill)
  const out = Buffer.alloc(8 + name.length + key.length)
  out.writeUInt32BE(name.length, 0)
  name.copy(out, 4)
  out.writeUInt32BE(key.length, 4 + name.length)
  key.copy(out, 8 + name.length)
  return out
}

const KEY = blob('ssh-ed25519', 1)
const OTHER = blob('ssh-ed25519', 2)
const RSA = blob('ssh-rsa', 3)
const line = (hosts: string, key: Buffer) => `${hosts} ${keyTypeOf(key)} ${key.toString('base64')}`

function hashed(name: string): string {
  const salt = randomBytes(20)
  return `|1|${salt.toString('base64')}|${createHmac('sha1', salt).update(name).digest('base64')}`
}

describe('known_hosts, batch mode', () => {
  it('names a non-22 port as [host]:port', () => {
    expect(knownHostsName('box', 22)).toBe('box')
    expect(knownHostsName('127.0.0.1', 2222)).toBe('[127.0.0.1]:2222')
  })

  it.each([
    ['a plain entry', line('other,box', KEY), 'box', 22, 'trusted'],
    ['a port entry', line('[box]:2222', KEY), 'box', 2222, 'trusted'],
    ['an entry for port 22 only', line('box', KEY), 'box', 2222, 'unknown'],
    ['a hashed entry', line(hashed('[127.0.0.1]:40022'), KEY), '127.0.0.1', 40022, 'trusted'],
    ['a wildcard', line('*.lab', KEY), 'gpu.lab', 22, 'trusted'],
    ['a negated wildcard', line('*.lab,!gpu.lab', KEY), 'gpu.lab', 22, 'unknown'],
    ['another key of the same type', line('box', OTHER), 'box', 22, 'changed'],
    ['only a key of another type', line('box', RSA), 'box', 22, 'unknown'],
    ['a revoked key', `@revoked * ${keyTypeOf(KEY)} ${KEY.toString('base64')}\n${line('box', KEY)}`, 'box', 22, 'revoked'],
    ['an old and the current key', `${line('box', OTHER)}\n${line('box', KEY)}`, 'box', 22, 'trusted'],
    ['nothing', '# empty\n', 'box', 22, 'unknown'],
  ])('%s', (_label, text, host, port, verdict) => {
    expect(checkHostKey(text, host, port, KEY)).toBe(verdict)
  })
})
