import {userInfo} from 'node:os'

/** The person who typed the command: under sudo that is SUDO_USER, not root; sessions and keys are theirs. */
export type InvokingUser = {
  readonly uid: number
  readonly gid: number
  readonly user: string
  /** the process itself runs as root (directly or through sudo) */
  readonly isRoot: boolean
}

export function invokingUser(env: Readonly<Record<string, string | undefined>> = process.env): InvokingUser {
  const uid = process.getuid?.() ?? -1
  const gid = process.getgid?.() ?? -1
  const sudoUid = Number(env.SUDO_UID)
  const sudoGid = Number(env.SUDO_GID)
  if (uid === 0 && env.SUDO_USER && Number.isInteger(sudoUid)) {
    return {uid: sudoUid, gid: Number.isInteger(sudoGid) ? sudoGid : sudoUid, user: env.SUDO_USER, isRoot: true}
  }
  return {uid, gid, user: userInfo().username, isRoot: uid === 0}
}
