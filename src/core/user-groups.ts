/**
 * The one reader of users and groups. Two sources, each for what it is right for:
 * - the local files (/etc/passwd, /etc/group), read at once and without a process: the groups a user is in, a
 *   group's id, a user's id (the engine's gate, quotas, reserved session names);
 * - the name service through the executor (`id`, `getent`), which also knows LDAP/sssd users: the groups a login
 *   would give (what a mount is checked against), whether a group exists (install).
 */
import {readFileSync} from 'node:fs'

import type {Executor} from './executor.js'

function linesOf(file: string): string[][] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#'))
      .map((line) => line.split(':'))
  } catch {
    return []
  }
}

export function groupNamesOf(user: string, uid: number, files = {passwd: '/etc/passwd', group: '/etc/group'}): string[] {
  const primaryGid = linesOf(files.passwd).find((f) => f[0] === user || f[2] === String(uid))?.[3]
  return linesOf(files.group)
    .filter((f) => f[2] === primaryGid || (f[3] ?? '').split(',').includes(user))
    .map((f) => f[0])
}

/** A group's id by name, from /etc/group; null when there is no such group. */
export function groupId(group: string, groupFile = '/etc/group'): number | null {
  const gid = linesOf(groupFile).find((f) => f[0] === group)?.[2]
  return gid !== undefined && /^\d+$/.test(gid) ? Number(gid) : null
}

/**
 * A user's id by name, from /etc/passwd; null when there is no such user there. Users known only to NSS (LDAP, sssd)
 * are not seen: on such a box this reads what `getent passwd` would answer only for local users.
 */
export function userIdOf(user: string, passwdFile = '/etc/passwd'): number | null {
  if (user === '') return null
  const uid = linesOf(passwdFile).find((f) => f[0] === user)?.[2]
  return uid !== undefined && /^\d+$/.test(uid) ? Number(uid) : null
}

/** The group ids a login of `user` gets, from the name service (`id -G`): what setpriv --init-groups would set. */
export async function loginGroupIds(user: string, executor: Executor): Promise<{ok: true; gids: number[]} | {ok: false; why: string}> {
  const result = await executor.run(['id', '-G', '--', user], {timeoutMs: 10_000})
  if (result.exitCode !== 0) return {ok: false, why: result.stderr.trim().split('\n')[0] || `exit ${result.exitCode}`}
  const gids = result.stdout
    .trim()
    .split(/\s+/)
    .filter((g) => /^\d+$/.test(g))
    .map(Number)
  return {ok: true, gids}
}

/** Whether the name service knows the group (`getent group`). */
export async function groupExists(group: string, executor: Executor): Promise<boolean> {
  return (await executor.run(['getent', 'group', group])).exitCode === 0
}
