import {Args, loadHelpClass} from '@oclif/core'

import {BaseCommand} from '../shell/base-command.js'
import {unknownCommand} from '../shell/unknown-command.js'

/** `help [COMMAND]`, on oclif core's own Help class (what @oclif/plugin-help's command does, bundled with us). */
export default class Help extends BaseCommand {
  static summary = 'Show help for gpu-cosplay or one of its commands'
  static strict = false
  static args = {command: Args.string({description: 'command to show help for', required: false})}
  static examples = ['<%= config.bin %> help', '<%= config.bin %> help plan']

  async run(): Promise<void> {
    const {argv} = await this.parse(Help)
    const words = argv as string[]
    const [id] = words
    // `help lease hold` and `help lease:hold` name a command of a topic; `help lease` the topic itself
    const known = (n: number) => this.config.findCommand(words.slice(0, n).join(':')) || this.config.findTopic(words.slice(0, n).join(':'))
    if (id !== undefined && !(known(words.length) || known(1))) {
      throw unknownCommand(
        id,
        this.config.commands.filter((c) => !c.hidden).map((c) => c.id),
        this.config.bin,
      )
    }
    const HelpClass = await loadHelpClass(this.config)
    await new HelpClass(this.config, this.config.pjson.oclif.helpOptions ?? {}).showHelp(words)
  }
}
