/**
 * The parts of ~/.ssh/config a thin client needs (HostName, User, Port, IdentityFile, ProxyJump,
 * UserKnownHostsFile), with ssh's rules: the first value found wins, `Host` patterns with `*`, `?` and `!`.
 * `Match` blocks and `Include` are not followed (their settings are ignored, never misapplied).
 */
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

export type SshHostConfig = {
  hostName: string | null
  user: string | null
  port: number | null
  identityFiles: string[]
  proxyJump: string | null
  userKnownHostsFiles: string[]
}

const KEYS = ['hostname', 'user', 'port', 'identityfile', 'proxyjump', 'userknownhostsfile'] as const

export function readSshConfig(home: string): string {
  try {
    return readFileSync(join(home, '.ssh', 'config'), 'utf8')
  } catch {
    return ''
  }
}

export function sshConfigFor(text: string, alias: string, home: string): SshHostConfig {
  const found = new Map<string, string[]>()
  let applies = true
  for (const rawLine of text.split('\n')) {
    const line = rawLine.trim()
    if (line === '' || line.startsWith('#')) continue
    const match = /^(\S+?)(?:\s*=\s*|\s+)(.*)$/.exec(line)
    if (!match) continue
    const keyword = match[1].toLowerCase()
    const value = unquote(match[2].trim())
    if (keyword === 'host') {
      applies = hostPatternMatches(match[2].trim().split(/\s+/), alias)
      continue
    }
    if (keyword === 'match') {
      applies = false
      continue
    }
    if (!applies || !(KEYS as readonly string[]).includes(keyword)) continue
    // IdentityFile and UserKnownHostsFile accumulate; everything else keeps its first value
    if (keyword === 'identityfile') found.set(keyword, [...(found.get(keyword) ?? []), value])
    else if (keyword === 'userknownhostsfile') {
      if (!found.has(keyword)) found.set(keyword, value.split(/\s+/))
    } else if (!found.has(keyword)) found.set(keyword, [value])
  }
  const first = (key: string) => found.get(key)?.[0] ?? null
  const port = first('port')
  const proxyJump = first('proxyjump')
  return {
    hostName: first('hostname')?.replace(/%h/g, alias) ?? null,
    user: first('user'),
    port: port === null || !/^\d+$/.test(port) ? null : Number(port),
    identityFiles: (found.get('identityfile') ?? []).map((path) => expandHome(path, home)),
    proxyJump: proxyJump === null || proxyJump.toLowerCase() === 'none' ? null : proxyJump,
    userKnownHostsFiles: (found.get('userknownhostsfile') ?? []).map((path) => expandHome(path, home)),
  }
}

/** ssh's host pattern lists (ssh_config `Host`, known_hosts): `*` and `?` globs, case-insensitive; a matching `!pattern` vetoes. */
export function hostPatternMatches(patterns: readonly string[], name: string): boolean {
  let matched = false
  for (const raw of patterns) {
    const negated = raw.startsWith('!')
    const pattern = unquote(negated ? raw.slice(1) : raw)
    if (!globMatch(pattern, name)) continue
    if (negated) return false
    matched = true
  }
  return matched
}

function globMatch(pattern: string, text: string): boolean {
  const regex = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.')
  return new RegExp(`^${regex}$`, 'i').test(text)
}

function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value
}

export function expandHome(path: string, home: string): string {
  if (path === '~') return home
  if (path.startsWith('~/')) return join(home, path.slice(2))
  return path.replace(/%d/g, home)
}
