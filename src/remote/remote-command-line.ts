/**
 * The one line the box's login shell runs. sshd hands it to `$SHELL -c`, so every word is single-quoted for a
 * POSIX shell (a quote inside becomes '\''): spaces, `$`, `;`, backslashes and newlines arrive as typed.
 */
import {singleQuote} from '../core/shell-words.js'

export const REMOTE_PROTOCOL = 1
export const CANCEL_ON_EOF_ENV = 'GPU_COSPLAY_CANCEL_ON_EOF'

/** every word single-quoted, plain ones too (see above), unlike shellQuote */

/** the per-version folder `remote install` fills, as a shell expression on the box */
export function remoteBundleDirExpr(version: string): string {
  if (!/^[0-9A-Za-z.+-]+$/.test(version)) throw new Error(`unexpected version string ${JSON.stringify(version)}`)
  return `\${XDG_CACHE_HOME:-$HOME/.cache}/gpu-cosplay/${version}`
}

/**
 * Runs the pushed bundle of this version when there is one, else the admin's `gpu-cosplay` on PATH (the
 * handshake then checks its version). The command runs with stdin EOF as its Ctrl-C, and never forwards again.
 */
export function remoteCommandLine(argv: readonly string[], version: string): string {
  return [
    `B="${remoteBundleDirExpr(version)}"`,
    'if [ -f "$B/bin/run.js" ]; then set -- node "$B/bin/run.js"; else set -- gpu-cosplay; fi',
    'unset GPU_COSPLAY_HOST',
    `${CANCEL_ON_EOF_ENV}=1`,
    `export ${CANCEL_ON_EOF_ENV}`,
    `exec "$@" ${argv.map(singleQuote).join(' ')}`,
  ].join('; ')
}

/**
 * What a forwarded command sends: its argv without --host (and without --json, which goes first so that it
 * is never after a `--`), and always --json.
 */
export function forwardedArgv(commandId: string, argv: readonly string[]): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    if (arg === '--') {
      out.push(...argv.slice(i))
      break
    }
    if (arg === '--host') {
      i++
      continue
    }
    if (arg.startsWith('--host=') || arg === '--json') continue
    out.push(arg)
  }
  return [...commandId.split(':'), '--json', ...out]
}
