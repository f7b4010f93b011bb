/**
 * The bundle's entry: oclif's "explicit" command strategy reads COMMANDS from here, so start-up loads one
 * file instead of resolving a command tree. Commands import their heavy layers (apply, Docker, ssh) lazily.
 */
import Doctor from './commands/doctor.js'
import Down from './commands/down.js'
import Info from './commands/info.js'
import Ls from './commands/ls.js'
import Plan from './commands/plan.js'
import Ps from './commands/ps.js'
import Recover from './commands/recover.js'
import Reset from './commands/reset.js'
import Status from './commands/status.js'
import Up from './commands/up.js'

export const COMMANDS = {
  doctor: Doctor,
  down: Down,
  info: Info,
  ls: Ls,
  plan: Plan,
  ps: Ps,
  recover: Recover,
  reset: Reset,
  status: Status,
  up: Up,
}

export {execute} from '@oclif/core'
