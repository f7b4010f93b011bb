/**
 * The bundle's entry: oclif's "explicit" command strategy reads COMMANDS from here, so start-up loads one
 * file instead of resolving a command tree. Commands that need Docker or ssh import them lazily.
 */
import Info from './commands/info.js'
import Ls from './commands/ls.js'
import Plan from './commands/plan.js'

export const COMMANDS = {
  info: Info,
  ls: Ls,
  plan: Plan,
}

export {execute} from '@oclif/core'
