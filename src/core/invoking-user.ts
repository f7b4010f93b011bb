import {userInfo} from 'node:os'

import {actsForCaller, ENGINE_ENV} from './box-config.js'
import {StateError} from './errors.js'

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

export function invokingUser(env: Readonly<Record<string, string | undefined>> = process.env): InvokingUser {
  const uid = process.getuid?.() ?? -1
  const gid = process.getgid?.() ?? -1
  const sudoUid = Number(env.SUDO_UID)
  const sudoGid = Number(env.SUDO_GID)
  if (uid === 0 && env.SUDO_USER && env.SUDO_UID && Number.isInteger(sudoUid)) {
    // through the engine, SUDO_* are sudo's own word on who ran it (the entry point passes nothing else through)
    const isRoot = actsForCaller(env) ? sudoUid === 0 : true
    return {uid: sudoUid, gid: Number.isInteger(sudoGid) ? sudoGid : sudoUid, user: env.SUDO_USER, isRoot}
  }
  return {uid, gid, user: userInfo().username, isRoot: uid === 0}
}

/**
 * A command whose effect is the whole box's (the shared default image, GPU-wide settings held for a cluster job) is
 * root's on a shared box: a member reaching the engine for it is refused before anything happens.
 */
export function requireRootOnSharedBox(command: string, why: string): void {
  // a member's own client says so before it asks (the engine, acting for them, again)
  const memberClient = process.env[ENGINE_ENV] === 'member' && process.getuid?.() !== 0
  if (memberClient || (actsForCaller() && !invokingUser().isRoot)) {
    throw new StateError('ROOT_ONLY', `${command} ${why}: on this shared box only root may run it`, {
      exit: 4,
      fix: [`ask an admin: sudo gpu-cosplay ${command}`],
    })
  }
}
