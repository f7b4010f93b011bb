/**
 * $XDG_CONFIG_HOME/gpu-cosplay/hosts.yaml: names for GPU boxes, so `--host lab` means `ssh://alice@lab-gpu-3:2222`.
 *   version: 1
 *   hosts:
 *     lab: {url: ssh://alice@lab-gpu-3:2222}
 */
import {join} from 'node:path'

import {load} from 'js-yaml'
import * as z from 'zod'

import {readTextIfExists} from '../core/json-file.js'
import {parseHostUrl} from './host-url.js'
import {RemoteError} from './remote-error.js'

const HostEntrySchema = z.strictObject({url: z.string().min(1), description: z.string().optional()})
export const HostsFileSchema = z.strictObject({
  version: z.literal(1),
  hosts: z.record(
    z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a host name is letters, digits, ".", "_" or "-"')
      .refine((name) => name !== 'all', '"all" is reserved: --host all means every host in this file'),
    HostEntrySchema,
  ),
})
export type HostsFile = z.infer<typeof HostsFileSchema>

export function hostsFilePath(env: NodeJS.ProcessEnv, home: string): string {
  return join(env.XDG_CONFIG_HOME || join(home, '.config'), 'gpu-cosplay', 'hosts.yaml')
}

/** The named hosts, validated strictly; an absent file is no names. */
export function readHostsFile(path: string): HostsFile {
  let text: string | null
  try {
    text = readTextIfExists(path, {followSymlinks: true}) // the user's own config (a dotfiles symlink is fine)
  } catch (error) {
    throw new RemoteError('BAD_HOSTS_FILE', `cannot read ${path}: ${(error as Error).message}`, {exit: 2, cause: error})
  }
  if (text === null) return {version: 1, hosts: {}}
  return parseHostsFile(text, path)
}

export function parseHostsFile(text: string, path: string): HostsFile {
  let raw: unknown
  try {
    raw = load(text)
  } catch (error) {
    const reason = (error as Error).message.split('\n')[0]
    throw new RemoteError('BAD_HOSTS_FILE', `${path} is not YAML: ${reason}`, {exit: 2, cause: error})
  }
  const parsed = HostsFileSchema.safeParse(raw)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]
    const where = issue.path.length > 0 ? issue.path.join('.') : '(top level)'
    const keys = issue.code === 'unrecognized_keys' ? ` ${issue.keys.join(', ')}` : ''
    throw new RemoteError('BAD_HOSTS_FILE', `${path}: ${where}: ${issue.message}${keys}`, {
      exit: 2,
      fix: ['expected "version: 1" and "hosts: {NAME: {url: ssh://user@box[:port]}}"'],
    })
  }
  for (const [name, entry] of Object.entries(parsed.data.hosts)) {
    try {
      parseHostUrl(entry.url, name)
    } catch (error) {
      throw new RemoteError('BAD_HOSTS_FILE', `${path}: hosts.${name}.url: ${(error as Error).message}`, {exit: 2, cause: error})
    }
  }
  return parsed.data
}
