import {Args} from '@oclif/core'

import {InputError} from '../core/errors.js'
import {BaseCommand, commandAfterDashes} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'

export type ExecResult = {session: string; exitCode: number}

export default class Exec extends BaseCommand {
  static summary = "Run a command in a session's container with docker exec"
  static description = `Runs the words after -- as an argv (no shell) in the container, as you, in /workspace, with the session's environment. Output streams as it comes; with a terminal on stdin it gets a tty. The command's exit code becomes this command's. NAME may be left out when you have exactly one session.

With --host the session is on a GPU box: gpu-cosplay exec runs there (docker exec is the box's), every word of the argv arriving as typed, stdin, stdout and stderr streamed both ways, and a pty there when yours is a terminal.`
  static examples = [
    '<%= config.bin %> exec -- nvidia-smi -L',
    '<%= config.bin %> exec alice-rtx_3090 -- python -c "import torch"',
    '<%= config.bin %> exec alice-rtx_3090 --host gpu-box -- nvidia-smi -L',
  ]
  static enableJsonFlag = false
  static strict = false
  static args = {name: Args.string({description: 'session name (default: your only session)'})}
  static flags = {...hostFlag}

  async run(): Promise<ExecResult> {
    const {options, command} = commandAfterDashes(this.argv)
    const {args, flags} = await this.parse(Exec, options)
    if (command.length === 0)
      throw new InputError('NO_COMMAND', 'give the command after --', {fix: ['gpu-cosplay exec -- nvidia-smi -L', 'for a shell: gpu-cosplay ssh']})
    const tty = Boolean(process.stdin.isTTY && process.stdout.isTTY)
    let result: ExecResult
    if (flags.host?.trim()) {
      const {execOnHost} = await import('../client/session-on-host.js')
      result = {session: args.name ?? '', exitCode: await execOnHost({spec: flags.host, name: args.name, command, tty, version: this.config.version})}
    } else {
      result = await this.runHere(args.name, command, tty)
    }
    process.exitCode = result.exitCode < 0 ? 1 : result.exitCode
    return result
  }

  private async runHere(name: string | undefined, command: string[], tty: boolean): Promise<ExecResult> {
    const [{perform}, {attached, windowSize}] = await Promise.all([import('../engine/perform.js'), import('../client/terminal-io.js')])
    const size = tty ? windowSize() : null
    const request = {op: 'exec', name: name ?? null, argv: command, tty, rows: size?.rows ?? null, cols: size?.cols ?? null} as const
    return attached(tty, () => perform(request, {progress: null, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr}, this.config.version))
  }
}
