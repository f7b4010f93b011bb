import {userInfo} from 'node:os'

/** The person who typed the command: under sudo that is SUDO_USER, not root; sessions and keys are theirs. */
export type InvokingUser = {
  readonly uid: number
  readonly gid: number
  readonly user: string
  /**
   * may act on anyone's session (end it, reset a GPU): root itself. The engine runs as root for every member of the
   * box's group, so there it is the caller who must be root; an admin's own `sudo gpu-cosplay` is root.
   */
  readonly isRoot: boolean
}

/**
 * Who is asking, from the process and sudo's word (SUDO_UID, SUDO_USER). `actsForCaller`: this process is the engine
 * serving a caller who came through the sudoers rule (see call-context.ts, the only caller that decides it), where
 * only a caller who is root themself may act for others.
 */
export function invokingUserOf(
  env: Readonly<Record<string, string | undefined>>,
  actsForCaller: boolean,
  uid: number = process.getuid?.() ?? -1,
): InvokingUser {
  const gid = process.getgid?.() ?? -1
  const sudoUid = Number(env.SUDO_UID)
  const sudoGid = Number(env.SUDO_GID)
  if (uid === 0 && env.SUDO_USER && env.SUDO_UID && Number.isInteger(sudoUid)) {
    // through the engine, SUDO_* are sudo's own word on who ran it (the entry point passes nothing else through)
    const isRoot = actsForCaller ? sudoUid === 0 : true
    return {uid: sudoUid, gid: Number.isInteger(sudoGid) ? sudoGid : sudoUid, user: env.SUDO_USER, isRoot}
  }
  return {uid, gid, user: userInfo().username, isRoot: uid === 0}
}
