/** Users and groups by name, from /etc/passwd and /etc/group: the groups a user is in, a group's id, a user's id. */
import {readFileSync} from 'node:fs'

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
