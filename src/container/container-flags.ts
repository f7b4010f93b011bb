/** `up`'s container flags, parsed into what the container layer takes; bad values are one-line InputErrors. */
import {statSync} from 'node:fs'
import {isIP} from 'node:net'
import path from 'node:path'

import {InputError} from '../core/errors.js'
import {byteSizeOf} from '../core/units.js'

/** '1g', '512m', '2GiB', '1073741824' -> bytes. */
export function parseByteSize(text: string, flag = '--shm-size'): number {
  const bytes = byteSizeOf(text)
  if (bytes === null) throw new InputError('BAD_SIZE', `${flag} ${text}: not a size (e.g. 512m, 2g)`)
  return bytes
}

/** --env K=V */
export function parseEnvFlags(items: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {}
  for (const item of items) {
    const at = item.indexOf('=')
    const key = at > 0 ? item.slice(0, at) : ''
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key)) throw new InputError('BAD_ENV', `--env ${item}: expected NAME=VALUE`)
    env[key] = item.slice(at + 1)
  }
  return env
}

/** --volume HOST:CONTAINER[:ro|rw]; the host side becomes absolute. */
export function parseVolumeFlags(items: readonly string[], cwd: string): string[] {
  return items.map((item) => {
    const parts = item.split(':')
    if (parts.length < 2 || parts.length > 3 || !parts[0] || !parts[1].startsWith('/') || (parts[2] && !/^(ro|rw)$/.test(parts[2]))) {
      throw new InputError('BAD_VOLUME', `--volume ${item}: expected HOST:CONTAINER[:ro] with an absolute container path`)
    }
    const host = parts[0].startsWith('/') || parts[0].startsWith('.') ? path.resolve(cwd, parts[0]) : parts[0]
    return [host, ...parts.slice(1)].join(':')
  })
}

/** One 'HOST:CONTAINER[:ro|rw]' (as parseVolumeFlags left it) as its parts. */
export function parseVolumeSpec(spec: string): {source: string; target: string; readOnly: boolean} {
  const [source, target, mode] = spec.split(':')
  return {source, target, readOnly: mode === 'ro'}
}

/** --ssh-bind: an IP address Docker can publish on; checked before Docker is contacted. */
export function parseBindAddress(text: string): string {
  if (isIP(text) === 0) throw new InputError('BAD_SSH_BIND', `--ssh-bind ${text}: not an IP address (e.g. 127.0.0.1, 0.0.0.0, ::)`)
  return text
}

/** --workspace: an existing folder, made absolute. */
export function parseWorkspace(dir: string, cwd: string): string {
  const absolute = path.resolve(cwd, dir)
  let isDir = false
  try {
    isDir = statSync(absolute).isDirectory()
  } catch {
    // reported below
  }
  if (!isDir) throw new InputError('BAD_WORKSPACE', `--workspace ${absolute} is not a folder`)
  return absolute
}
