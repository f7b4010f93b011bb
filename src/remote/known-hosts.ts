/**
 * Host keys checked the way `ssh -o BatchMode=yes -o StrictHostKeyChecking=yes` checks them: a key listed for
 * the host passes, a different key of the same type is "changed", no entry is "unknown". Nothing is ever
 * added to the file and nobody is asked.
 */
import {createHmac} from 'node:crypto'
import {readFileSync} from 'node:fs'

import {keyTypeOf} from '../core/ssh-connection.js'
import {hostPatternMatches} from './ssh-config-file.js'

export type HostKeyVerdict = 'trusted' | 'unknown' | 'changed' | 'revoked'

/** how known_hosts names a host: `box` on port 22, `[box]:2222` elsewhere */
export function knownHostsName(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`
}

export function checkHostKey(knownHostsText: string, host: string, port: number, blob: Buffer): HostKeyVerdict {
  const name = knownHostsName(host, port)
  const type = keyTypeOf(blob)
  const key = blob.toString('base64')
  let trusted = false
  let otherKey = false
  for (const rawLine of knownHostsText.split('\n')) {
    const fields = rawLine.trim().split(/\s+/)
    if (fields[0] === '' || fields[0].startsWith('#')) continue
    const marker = fields[0].startsWith('@') ? fields.shift() : undefined
    if (marker === '@cert-authority') continue
    const [patterns, lineType, lineKey] = fields
    if (lineKey === undefined || !hostListMatches(patterns, name)) continue
    if (marker === '@revoked') {
      if (lineKey === key) return 'revoked'
      continue
    }
    if (lineType === type && lineKey === key) trusted = true
    else if (lineType === type) otherKey = true
  }
  return trusted ? 'trusted' : otherKey ? 'changed' : 'unknown'
}

export function readKnownHosts(paths: readonly string[]): string {
  return paths
    .map((path) => {
      try {
        return readFileSync(path, 'utf8')
      } catch {
        return ''
      }
    })
    .join('\n')
}

function hostListMatches(list: string, name: string): boolean {
  return list.startsWith('|1|') ? hashedMatches(list, name) : hostPatternMatches(list.split(','), name)
}

function hashedMatches(entry: string, name: string): boolean {
  const [, , salt, hash] = entry.split('|')
  if (salt === undefined || hash === undefined) return false
  return createHmac('sha1', Buffer.from(salt, 'base64')).update(name).digest('base64') === hash
}
