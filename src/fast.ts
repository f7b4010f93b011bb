/**
 * dist/fast.js: `ls`, `info` and `plan --on` without loading oclif (see shell/oclif-lite.ts). bin/run.js tries this
 * first for those commands; `false` means "not handled here, nothing printed": run the real CLI.
 */
import Info from './commands/info.js'
import Ls from './commands/ls.js'
import Plan from './commands/plan.js'
import {FallBack} from './shell/oclif-lite.js'

const FAST = {ls: Ls, info: Info, plan: Plan} as const

export async function runFast(argv: readonly string[]): Promise<boolean> {
  const [id, ...rest] = argv
  const Command = FAST[id as keyof typeof FAST]
  if (Command === undefined) return false
  // plan without --on reads the GPU: a failure there must not run nvidia-smi twice
  if (id === 'plan' && !rest.some((arg) => arg === '--on' || arg.startsWith('--on='))) return false
  // --host runs on another box (oclif-lite knows no flag environment variables either)
  if (process.env.GPU_COSPLAY_HOST || rest.some((arg) => arg === '--host' || arg.startsWith('--host='))) return false
  // oclif colours JSON on a terminal
  if (rest.includes('--json') && process.stdout.isTTY) return false
  // the lite Command has the constructor oclif-lite gives it; the cast only hides oclif's real signature
  const command = new (Command as unknown as new (argv: string[]) => {run(): Promise<unknown>; jsonEnabled(): boolean})([...rest])
  let result: unknown
  try {
    result = await command.run()
  } catch (error) {
    // every failure, ours or a FallBack, is reported by the real CLI, which runs the command again
    if (error instanceof FallBack || error instanceof Error) return false
    throw error
  }
  if (command.jsonEnabled()) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`)
  return true
}
