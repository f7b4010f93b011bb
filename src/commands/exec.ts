import {Args} from '@oclif/core'

import {InputError} from '../core/errors.js'
import {BaseCommand} from './support/base-command.js'

export type ExecResult = {session: string; exitCode: number}

export default class Exec extends BaseCommand {
  static summary = "Run a command in a session's container with docker exec"
  static description = `Runs the words after -- as an argv (no shell) in the container, as you, in /workspace, with the session's environment. Output streams as it comes; with a terminal on stdin it gets a tty. The command's exit code becomes this command's. NAME may be left out when you have exactly one session.`
  static examples = ['<%= config.bin %> exec -- nvidia-smi -L', '<%= config.bin %> exec alice-rtx_3090 -- python -c "import torch"']
  static enableJsonFlag = false
  static strict = false
  static args = {name: Args.string({description: 'session name (default: your only session)'})}

  async run(): Promise<ExecResult> {
    // the words after -- are the command, taken before oclif's parser sees (and consumes) them
    const raw = [...this.argv]
    const at = raw.indexOf('--')
    const command = at < 0 ? [] : raw.slice(at + 1)
    const {args} = await this.parse(Exec, at < 0 ? raw : raw.slice(0, at))
    if (command.length === 0)
      throw new InputError('NO_COMMAND', 'give the command after --', {fix: ['gpu-cosplay exec -- nvidia-smi -L', 'for a shell: gpu-cosplay ssh']})
    const {accessSession, execInSession, rawTerminal, releaseStdin} = await import('./support/session-access.js')
    const access = accessSession(args.name)
    const tty = Boolean(process.stdin.isTTY && process.stdout.isTTY)
    const restore = tty ? rawTerminal() : () => undefined
    let exitCode: number
    try {
      exitCode = await execInSession(access, command, {stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, tty})
    } finally {
      restore()
      releaseStdin()
    }
    process.exitCode = exitCode < 0 ? 1 : exitCode
    return {session: access.container.session, exitCode}
  }
}
