/**
 * The two files that make the engine boundary: the root-owned entry point, and the one sudoers rule that lets the
 * box's group run it as root. sudo resets the environment and names the caller (SUDO_UID, SUDO_GID, SUDO_USER);
 * the entry point then starts the root-owned node on the package's engine (dist/engine.js, not the CLI) with
 * `env -i`, so nothing of the caller's (NODE_OPTIONS, PATH, GPU_COSPLAY_*) reaches root, in a session of its own
 * (setsid), so the caller's terminal cannot stop it (Ctrl-Z) while it holds a GPU's lock. The caller's arguments
 * are passed on only for the engine to refuse: it reads its one request on stdin.
 */
import {ENGINE_ENV} from '../core/box-config.js'

export const ENGINE_PATH = '/usr/local/libexec/gpu-cosplay/engine'
export const SUDOERS_PATH = '/etc/sudoers.d/gpu-cosplay'
/** util-linux's setsid: --wait keeps the engine's exit status */
export const SETSID = '/usr/bin/setsid'
const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

/** Paths go into a shell script and a sudoers line: only plain ones. */
export function isPlainPath(file: string): boolean {
  return /^\/[A-Za-z0-9._/+@-]*$/.test(file) && !file.split('/').includes('..')
}

export function renderEntryPoint(nodePath: string, engineJs: string, setsid: string = SETSID): string {
  return `#!/bin/sh
# gpu-cosplay engine: written by \`gpu-cosplay system install\`; the sudoers rule ${SUDOERS_PATH} names this file.
# Runs root's gpu-cosplay engine for the caller sudo names, with none of the caller's environment, in a session of its own.
exec /usr/bin/env -i PATH=${SAFE_PATH} LANG=C.UTF-8 HOME=/root \\
  SUDO_UID="\${SUDO_UID:-}" SUDO_GID="\${SUDO_GID:-}" SUDO_USER="\${SUDO_USER:-}" ${ENGINE_ENV}=caller \\
  ${setsid} --wait ${nodePath} ${engineJs} "$@"
`
}

export function renderSudoers(group: string, engine: string = ENGINE_PATH): string {
  return `# gpu-cosplay: members of ${group} run the gpu-cosplay engine as root, and nothing else.
# Written by \`gpu-cosplay system install\`; \`gpu-cosplay system uninstall\` removes it.
Defaults!${engine} env_reset, !setenv
%${group} ALL=(root) NOPASSWD: ${engine}
`
}
