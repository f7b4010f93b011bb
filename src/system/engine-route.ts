/**
 * The client side of the engine boundary on a shared box. bin/run.js asks here first, before oclif loads:
 *
 * - a member of the box's group (not root, no sandbox variables) has every command that touches the GPU, Docker or
 *   the box's state run by the engine: `sudo -n ENGINE argv`, stdio passed through, its exit code ours. Commands
 *   that need none of that (ls, info, plan, help, system, remote, anything with --host) run here, as the user;
 * - the engine itself (root, started by the entry point) takes the state directory and programs from the
 *   root-owned configuration alone;
 * - root at a shell of an installed box acts directly, on the same configuration.
 *
 * Who the caller is never comes from here: the engine learns it from sudo.
 */
import {spawn} from 'node:child_process'

import {adoptEngineConfig, ENGINE_ENV, isSandbox, pinBoxPaths, pinEngineEnvironment, type BoxConfig} from '../core/box-config.js'
import {readBoxConfig} from '../core/read-box-config.js'
import {groupId} from '../core/user-groups.js'

type Env = NodeJS.ProcessEnv

/** Commands that run as the user even on an installed box: they read nothing but the catalog, the user's files or a remote box. */
const CLIENT_COMMANDS = new Set(['ls', 'info', 'plan', 'help', 'version', 'autocomplete', 'system', 'remote', 'ssh-config'])

/** null: go on in this process; a number: the command ran elsewhere (or was refused), exit with it. */
export async function routeThroughEngine(argv: readonly string[], env: Env = process.env): Promise<number | null> {
  const uid = process.getuid?.() ?? -1
  if (env[ENGINE_ENV] === 'caller') {
    if (uid !== 0) return refuse(argv, 'NOT_THROUGH_SUDO', 'the gpu-cosplay engine runs only through sudo', ['run gpu-cosplay as yourself: it asks the engine'])
    const read = readBoxConfig()
    if (!read?.ok)
      return refuse(argv, 'BOX_CONFIG_UNTRUSTED', `the box's configuration cannot be used: ${read ? read.why : 'it is missing'}`, [
        'ask an admin: sudo gpu-cosplay system install --yes',
      ])
    pinEngineEnvironment(read.config, env)
    adoptEngineConfig(read.config)
    return null
  }
  delete env[ENGINE_ENV]
  if (isSandbox(env)) return null
  const read = readBoxConfig()
  if (read === null) return null
  if (uid === 0) {
    if (read.ok) {
      env[ENGINE_ENV] = 'root'
      pinBoxPaths(read.config, env)
      adoptEngineConfig(read.config)
    }
    return null
  }
  if (runsAsClient(argv, env)) {
    if (read.ok) pinBoxPaths(read.config, env)
    return null
  }
  if (!read.ok)
    return refuse(argv, 'BOX_CONFIG_UNTRUSTED', `the box's configuration cannot be used: ${read.why}`, ['ask an admin: sudo gpu-cosplay system install --yes'])
  if (!isMember(read.config.group)) {
    return refuse(argv, 'NOT_IN_GROUP', `only members of the group ${read.config.group} may use gpu-cosplay on this box`, [
      `ask an admin: sudo usermod -aG ${read.config.group} $USER (then log in again)`,
    ])
  }
  return runInEngine(read.config, argv)
}

/** Whether argv runs here, as the user (see CLIENT_COMMANDS); help and --host are the client's too. */
export function runsAsClient(argv: readonly string[], env: Env): boolean {
  const end = argv.indexOf('--')
  const options = end < 0 ? argv : argv.slice(0, end)
  const first = argv[0]
  // the handshake of a --host client answers for the engine that will run its commands
  if (first === 'remote' && argv[1] === 'info') return false
  if (first === undefined || first.startsWith('-') || CLIENT_COMMANDS.has(first)) return true
  if (options.some((a) => a === '--help' || a === '-h' || a === '--host' || a.startsWith('--host='))) return true
  return (env.GPU_COSPLAY_HOST ?? '').trim() !== ''
}

/** The box group's members: this process's groups (a new member must log in again, as for any group). */
function isMember(group: string): boolean {
  const gid = groupId(group)
  return gid !== null && (process.getgroups?.() ?? []).includes(gid)
}

/**
 * `sudo -n ENGINE argv`, with our stdio. A Ctrl-C typed at a terminal reaches sudo from the kernel and sudo relays
 * it once; one sent to this process alone (no terminal: a script, a --host client) is passed on by us.
 */
function runInEngine(config: BoxConfig, argv: readonly string[]): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn('sudo', ['-n', '--', config.engine, ...argv], {stdio: 'inherit'})
    const pass = (signal: NodeJS.Signals) => () => {
      if (signal !== 'SIGINT' || !process.stdin.isTTY) child.kill(signal)
    }
    const handlers = (['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const).map((signal) => [signal, pass(signal)] as const)
    for (const [signal, handler] of handlers) process.on(signal, handler)
    child.on('error', (error) => {
      resolve(
        refuse(argv, 'ENGINE_UNREACHABLE', `cannot run the gpu-cosplay engine through sudo: ${error.message}`, [
          'ask an admin: sudo gpu-cosplay system status',
        ]),
      )
    })
    child.on('exit', (code, signal) => {
      for (const [name, handler] of handlers) process.off(name, handler)
      resolve(code ?? 128 + (signal === 'SIGKILL' ? 9 : signal === 'SIGTERM' ? 15 : 2))
    })
  })
}

/** One error, in the CLI's own format (one line, or {error} under --json), without loading it. */
function refuse(argv: readonly string[], code: string, message: string, fix: string[]): number {
  const exit = 4
  if (argv.includes('--json')) process.stdout.write(`${JSON.stringify({error: {code, message, fix, exit}}, null, 2)}\n`)
  else process.stderr.write(`gpu-cosplay: ${message}${fix.length > 0 ? ` (${fix.join('; ')})` : ''}\n`)
  return exit
}
