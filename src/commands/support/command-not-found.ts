import type {Hook} from '@oclif/core'

import {describeFailure, printFailure} from './base-command.js'
import {unknownCommand} from './unknown-command.js'

/**
 * oclif's command_not_found hook. @oclif/plugin-not-found does the same did-you-mean, but it prints a
 * multi-line warning, prompts on a terminal and exits 127; here the failure goes through printFailure like
 * any other (one line, or the JSON error under --json) and exits 2.
 */
const hook: Hook.CommandNotFound = async function ({argv, config, id}) {
  const visible = config.commands.filter((command) => !command.hidden).flatMap((command) => [command.id, ...command.aliases])
  const failure = describeFailure(unknownCommand(id, visible, config.bin))
  const args = argv ?? []
  const passThrough = args.indexOf('--')
  printFailure(failure, args.slice(0, passThrough === -1 ? undefined : passThrough).includes('--json'))
  // already printed: oclif's handler only sets the exit code for an error marked this way
  throw Object.assign(new Error(failure.message), {skipOclifErrorHandling: true, oclif: {exit: failure.exit}})
}

export default hook
