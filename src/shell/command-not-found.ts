import type {Hook} from '@oclif/core'

import {describeFailure} from '../core/failure.js'
import {printFailure} from './base-command.js'
import {unknownCommand} from './unknown-command.js'

/**
 * oclif's command_not_found hook. @oclif/plugin-not-found does the same did-you-mean, but it prints a
 * multi-line warning, prompts on a terminal and exits 127; here the failure goes through printFailure like
 * any other (one line, or the JSON error under --json) and exits 2.
 */
const hook: Hook.CommandNotFound = async function ({argv, config, id}) {
  const args = argv ?? []
  // Topics are typed with a space (`lease hold`), so oclif folds the words after a command that takes no
  // arguments into the id (`ps extra-arg` -> ps:extra-arg): run that command with them, to fail as it does.
  const words = id.split(':')
  for (let n = words.length - 1; n >= 1; n--) {
    const known = words.slice(0, n).join(':')
    if (config.findCommand(known)) return config.runCommand(known, [...words.slice(n), ...args])
  }
  // the unknown word, after the topics it follows (`plna 3090` -> plna, `lease holdd` -> lease:holdd)
  let typed = 1
  while (typed < words.length && config.findTopic(words.slice(0, typed).join(':'))) typed++
  const visible = config.commands.filter((command) => !command.hidden).flatMap((command) => [command.id, ...command.aliases])
  const failure = describeFailure(unknownCommand(words.slice(0, typed).join(':'), visible, config.bin))
  const passThrough = args.indexOf('--')
  printFailure(failure, args.slice(0, passThrough === -1 ? undefined : passThrough).includes('--json'))
  // already printed: oclif's handler only sets the exit code for an error marked this way
  throw Object.assign(new Error(failure.message), {skipOclifErrorHandling: true, oclif: {exit: failure.exit}})
}

export default hook
