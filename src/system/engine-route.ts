/**
 * How this process stands on a shared box, decided before oclif loads (bin/run.js asks here first):
 *
 * - a member of an installed box (not root, no sandbox variables) runs every command here, as themselves; what needs
 *   root is one typed request to the engine (system/engine-client.ts), made by the commands that need it. The box's
 *   state directory and nvidia-smi are pinned for what the member reads directly (plan --host-gpu);
 * - root at a shell of an installed box acts directly, on the box's configuration;
 * - the engine itself is dist/engine.js, never this CLI: an entry point of an earlier install that still runs the CLI
 *   as root for a caller is refused here, until `system install` writes the current one.
 *
 * Who the caller is never comes from here: the engine learns it from sudo. Nor does this process's trust: the mark it
 * sets is read with the configuration by core/call-context.ts (callContextHere) where a command builds its context.
 */
import {ENGINE_ENV, isSandbox, pinBoxPaths} from '../core/box-config.js'
import {readBoxConfig} from '../core/read-box-config.js'

type Env = NodeJS.ProcessEnv

/** null: go on in this process; a number: refused, exit with it. */
export async function routeThroughEngine(argv: readonly string[], env: Env = process.env): Promise<number | null> {
  const uid = process.getuid?.() ?? -1
  if (env[ENGINE_ENV] === 'caller') {
    return refuse(argv, 'ENGINE_OUTDATED', 'this gpu-cosplay engine entry point is from an earlier install and is no longer served', [
      'ask an admin: sudo gpu-cosplay system install --yes',
    ])
  }
  delete env[ENGINE_ENV]
  if (isSandbox(env)) return null
  const read = readBoxConfig()
  if (read === null) return null
  // a member's client: what needs root goes to the engine (an untrusted configuration is reported when it is asked)
  if (uid !== 0) env[ENGINE_ENV] = 'member'
  if (!read.ok) return null
  pinBoxPaths(read.config, env)
  if (uid === 0) env[ENGINE_ENV] = 'root'
  return null
}

/** One error, in the CLI's own format (one line, or {error} under --json), without loading it. */
function refuse(argv: readonly string[], code: string, message: string, fix: string[]): number {
  const exit = 4
  if (argv.includes('--json')) process.stdout.write(`${JSON.stringify({error: {code, message, fix, exit}}, null, 2)}\n`)
  else process.stderr.write(`gpu-cosplay: ${message}${fix.length > 0 ? ` (${fix.join('; ')})` : ''}\n`)
  return exit
}
