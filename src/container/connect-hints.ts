import type {SessionContainer} from './session-container.js'

/** How a user reaches a session: our command, a plain ssh line, and a Host entry for ~/.ssh/config (VS Code Remote-SSH). */
export type ConnectHints = {
  readonly command: string
  /** null when the image has no sshd (sessions go through docker exec) */
  readonly ssh: string | null
  readonly sshConfig: string | null
}

export function connectHints(c: SessionContainer, keyPath: string): ConnectHints {
  return {
    command: `gpu-cosplay ssh ${c.session}`,
    ssh: c.sshPort === null ? null : `ssh -p ${c.sshPort} -i ${keyPath} ${c.user}@${c.sshHost}`,
    sshConfig: c.sshPort === null ? null : sshConfigEntry(c, keyPath),
  }
}

export function sshConfigEntry(c: SessionContainer, keyPath: string): string {
  // Every container has fresh host keys and ports get reused: pin nothing, the port is bound locally.
  return [
    `Host gpu-cosplay-${c.session}`,
    `  HostName ${c.sshHost}`,
    `  Port ${c.sshPort}`,
    `  User ${c.user}`,
    `  IdentityFile ${keyPath}`,
    '  IdentitiesOnly yes',
    '  StrictHostKeyChecking no',
    '  UserKnownHostsFile /dev/null',
    '  LogLevel ERROR',
  ].join('\n')
}
