/**
 * How much root a session's container holds. By default the session user gets none: the entrypoint and sshd run
 * as root with the few capabilities they need, no process may gain privileges through execve (sudo and any
 * setuid file do nothing), and no sudoers entry is written. A root process in a container writes setuid-root files
 * into its bind mounts, which are root on the host: `up --sudo` gives that back only where the box allows it.
 */
import type {BoxConfig} from '../core/box-config.js'
import {ContainerError} from '../core/errors.js'

/**
 * What the root entrypoint and sshd need, found by dropping one at a time against the cosplay image (test/e2e):
 * CHOWN hands the home, ~/.ssh, /workspace and the MPS folders to the session user; SETUID and SETGID let sshd
 * (privilege separation, the login) and setpriv (the MPS daemon) become that user; SYS_CHROOT lets sshd's
 * pre-authentication child chroot to /run/sshd; AUDIT_WRITE lets Debian's sshd write the audit record of a login on a
 * pty (it gives up the session otherwise). Not needed: DAC_OVERRIDE and FOWNER (root writes only into folders it owns
 * until it hands them over), NET_BIND_SERVICE (Docker 20.10+ opens every port of a container's own network namespace
 * to every uid), KILL.
 */
export const ENTRYPOINT_CAPABILITIES = ['CHOWN', 'SETUID', 'SETGID', 'SYS_CHROOT', 'AUDIT_WRITE'] as const

/** The variable that asks the entrypoint for the session user's sudoers entry (never persisted into sessions). */
export const SUDO_ENV = 'GPU_COSPLAY_GRANT_SUDO'

export type ContainerPrivileges = {
  /** the session user has sudo (`up --sudo`) */
  readonly sudo: boolean
  /** nothing runs as root: the container runs as the user, sessions go through docker exec */
  readonly unprivileged: boolean
  /** docker's User ('uid:gid'), or null for the image's (root, for the entrypoint) */
  readonly user: string | null
  /** null: Docker's default capabilities */
  readonly capDrop: readonly string[] | null
  readonly capAdd: readonly string[] | null
  readonly noNewPrivileges: boolean
  /** for the entrypoint; set either way, so that an --env of the same name never decides */
  readonly env: Readonly<Record<string, string>>
}

export type PrivilegeRequest = {
  /** `up --sudo`, already allowed by assertContainerSudoAllowed */
  readonly sudo: boolean
  /** the cosplay image (ours) rather than a user's own (--image) */
  readonly isCosplayImage: boolean
  /** this process is the engine acting for a caller (the call context's box is set) */
  readonly inEngine: boolean
  readonly owner: {readonly uid: number; readonly gid: number}
}

export function containerPrivileges(r: PrivilegeRequest): ContainerPrivileges {
  if (r.sudo) {
    return {sudo: true, unprivileged: false, user: null, capDrop: null, capAdd: null, noNewPrivileges: false, env: {[SUDO_ENV]: '1'}}
  }
  const hardened = {sudo: false, capDrop: ['ALL'], noNewPrivileges: true, env: {[SUDO_ENV]: '0'}}
  // Through the engine a user's own image is the user's binaries: run as root, they would be root on the host.
  if (r.inEngine && !r.isCosplayImage) return {...hardened, unprivileged: true, user: `${r.owner.uid}:${r.owner.gid}`, capAdd: []}
  return {...hardened, unprivileged: false, user: null, capAdd: [...ENTRYPOINT_CAPABILITIES]}
}

/**
 * `up --sudo` outside the engine gives nothing new (that user has Docker, which is root already); through the engine
 * only where the administrator allowed it at install.
 */
export function assertContainerSudoAllowed(engineConfig: BoxConfig | null): void {
  if (engineConfig === null || engineConfig.allowContainerSudo) return
  throw new ContainerError('CONTAINER_SUDO_NOT_ALLOWED', 'this box does not give sudo in session containers (it is root over everything mounted into them)', {
    exit: 4,
    fix: ['ask the administrator to allow it: gpu-cosplay system install --allow-container-sudo', 'or leave out --sudo'],
  })
}
