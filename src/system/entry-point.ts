/**
 * The two files that make the engine boundary: the root-owned entry point, and the one sudoers rule that lets the
 * box's group run it as root. sudo resets the environment and names the caller (SUDO_UID, SUDO_GID, SUDO_USER);
 * the entry point then starts the root-owned node on the root-owned package with `env -i`, so nothing of the
 * caller's (NODE_OPTIONS, PATH, GPU_COSPLAY_*) reaches root but the terminal type and one yes/no.
 */
import {ENGINE_ENV} from '../core/box-config.js'

export const ENGINE_PATH = '/usr/local/libexec/gpu-cosplay/engine'
export const SUDOERS_PATH = '/etc/sudoers.d/gpu-cosplay'
/** a --host client's "EOF on stdin is Ctrl-C": a yes/no about the caller's own command, so it may cross */
const CANCEL_ON_EOF = 'GPU_COSPLAY_CANCEL_ON_EOF'
const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/** Paths go into a shell script and a sudoers line: only plain ones. */
export function isPlainPath(file: string): boolean {
  return /^\/[A-Za-z0-9._/+@-]*$/.test(file) && !file.split('/').includes('..')
}

export function renderEntryPoint(nodePath: string, runJs: string): string {
  return `#!/bin/sh
# gpu-cosplay engine: written by \`gpu-cosplay system install\`; the sudoers rule ${SUDOERS_PATH} names this file.
# Runs root's gpu-cosplay for the caller sudo names, with none of the caller's environment.
case "\${TERM:-}" in '' | *[!A-Za-z0-9._+-]*) TERM=dumb ;; esac
case "\${${CANCEL_ON_EOF}:-}" in 1) ;; *) ${CANCEL_ON_EOF}= ;; esac
exec /usr/bin/env -i PATH=${SAFE_PATH} LANG=C.UTF-8 HOME=/root TERM="$TERM" \\
  SUDO_UID="\${SUDO_UID:-}" SUDO_GID="\${SUDO_GID:-}" SUDO_USER="\${SUDO_USER:-}" \\
  ${CANCEL_ON_EOF}="$${CANCEL_ON_EOF}" ${ENGINE_ENV}=caller \\
  ${nodePath} ${runJs} "$@"
`
}

export function renderSudoers(group: string, engine: string = ENGINE_PATH): string {
  return `# gpu-cosplay: members of ${group} run the gpu-cosplay engine as root, and nothing else.
# Written by \`gpu-cosplay system install\`; \`gpu-cosplay system uninstall\` removes it.
Defaults!${engine} env_reset, !setenv, env_keep += "${CANCEL_ON_EOF}"
%${group} ALL=(root) NOPASSWD: ${engine}
`
}
