import {Args} from '@oclif/core'

import {BaseCommand, commandAfterDashes} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'

export type SshResult = {session: string; via: 'ssh' | 'exec'; exitCode: number}

export default class Ssh extends BaseCommand {
  static summary = "Open a shell in a session's container, or run a command there"
  static description = `Logs in over ssh (ssh2, with the session's key) as you: an interactive shell with a pty that follows your terminal's size, or, after --, a command whose exit code becomes this command's. Like ssh, the words after -- are joined with spaces and run by your login shell. For an image without sshd it goes through docker exec instead. NAME may be left out when you have exactly one session.

With --host the session is on a GPU box: the box adds this machine's key (~/.ssh/gpu-cosplay/client_ed25519, made on first use) to the container, and the login goes through the box (an ssh tunnel to the container's sshd on the box's loopback) with the container's host key pinned.`
  static examples = [
    '<%= config.bin %> ssh',
    '<%= config.bin %> ssh alice-rtx_3090 -- nvidia-smi -L',
    '<%= config.bin %> ssh -- python train.py',
    '<%= config.bin %> ssh alice-rtx_3090 --host gpu-box',
  ]
  static enableJsonFlag = false
  static strict = false
  static args = {name: Args.string({description: 'session name (default: your only session)'})}
  static flags = {...hostFlag}

  async run(): Promise<SshResult> {
    const {options, command} = commandAfterDashes(this.argv)
    const {args, flags} = await this.parse(Ssh, options)
    const interactive = command.length === 0
    const tty = interactive && Boolean(process.stdin.isTTY && process.stdout.isTTY)
    let result: SshResult
    if (flags.host?.trim()) {
      const {sshOnHost} = await import('../client/session-on-host.js')
      result = await sshOnHost({spec: flags.host, name: args.name, command, tty, version: this.config.version})
    } else {
      result = await this.runHere(args.name, command, tty)
    }
    process.exitCode = result.exitCode < 0 ? 1 : result.exitCode
    return result
  }

  private async runHere(name: string | undefined, command: string[], tty: boolean): Promise<SshResult> {
    const [{memberOfBox}, {perform}, {attached, runOverSsh, windowSize}] = await Promise.all([
      import('../system/engine-client.js'),
      import('../engine/perform.js'),
      import('../client/terminal-io.js'),
    ])
    const viaExec = async (session: string | null): Promise<SshResult> => {
      const argv = command.length === 0 ? ['bash', '-l'] : ['sh', '-c', command.join(' ')]
      const size = tty ? windowSize() : null
      const request = {op: 'exec', name: session, argv, tty, rows: size?.rows ?? null, cols: size?.cols ?? null} as const
      const io = {progress: null, stdin: process.stdin, stdout: process.stdout, stderr: process.stderr}
      const ran = await attached(tty, () => perform(request, io, this.config.version))
      return {session: ran.session, via: 'exec', exitCode: ran.exitCode}
    }
    const lineOf = command.length === 0 ? null : command.join(' ')
    if (memberOfBox()) {
      // a member logs in as themselves, with their own key; the engine says where the session's sshd is
      const {loginAsMember} = await import('../client/member-ssh.js')
      const login = await loginAsMember(name ?? null)
      if (login === null) return viaExec(name ?? null)
      try {
        return {session: login.session, via: 'ssh', exitCode: await runOverSsh(login.ssh, lineOf, tty)}
      } finally {
        login.ssh.close()
      }
    }
    const {accessSession, identityFor, loginToSession} = await import('../client/session-access.js')
    const access = accessSession(await this.callContext(), name)
    const c = access.container
    if (c.sshPort === null || c.sshHost === null) return viaExec(c.session)
    const ssh = await loginToSession(access, await identityFor(access))
    try {
      return {session: c.session, via: 'ssh', exitCode: await runOverSsh(ssh, lineOf, tty)}
    } finally {
      ssh.close()
    }
  }
}
