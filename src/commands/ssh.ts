import {Args} from '@oclif/core'

import {BaseCommand} from './support/base-command.js'

export type SshResult = {session: string; via: 'ssh' | 'exec'; exitCode: number}

export default class Ssh extends BaseCommand {
  static summary = "Open a shell in a session's container, or run a command there"
  static description = `Logs in over ssh (ssh2, with the session's key) as you: an interactive shell with a pty that follows your terminal's size, or, after --, a command whose exit code becomes this command's. Like ssh, the words after -- are joined with spaces and run by your login shell. For an image without sshd it goes through docker exec instead. NAME may be left out when you have exactly one session.`
  static examples = ['<%= config.bin %> ssh', '<%= config.bin %> ssh alice-rtx_3090 -- nvidia-smi -L', '<%= config.bin %> ssh -- python train.py']
  static enableJsonFlag = false
  static strict = false
  static args = {name: Args.string({description: 'session name (default: your only session)'})}

  async run(): Promise<SshResult> {
    // the words after -- are the command, taken before oclif's parser sees (and consumes) them
    const raw = [...this.argv]
    const at = raw.indexOf('--')
    const command = at < 0 ? [] : raw.slice(at + 1)
    const {args} = await this.parse(Ssh, at < 0 ? raw : raw.slice(0, at))
    const {accessSession, identityFor, execInSession, rawTerminal, releaseStdin} = await import('./support/session-access.js')
    const access = accessSession(args.name)
    const c = access.container
    const interactive = command.length === 0
    const tty = interactive && Boolean(process.stdin.isTTY && process.stdout.isTTY)
    let exitCode: number
    if (c.sshPort === null || c.sshHost === null) {
      const argv = interactive ? ['bash', '-l'] : ['sh', '-c', command.join(' ')]
      const restore = tty ? rawTerminal() : () => undefined
      try {
        exitCode = await execInSession(access, argv, {stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, tty})
      } finally {
        restore()
        releaseStdin()
      }
    } else {
      const {SshSession} = await import('../container/ssh-client.js')
      const identity = await identityFor(access)
      const ssh = await SshSession.connectWithRetry({host: c.sshHost, port: c.sshPort, username: c.user, privateKey: identity.privateKey}, {timeoutMs: 10_000})
      try {
        if (tty) {
          const restore = rawTerminal()
          try {
            const session = await ssh.interactive(null, {
              stdin: process.stdin,
              stdout: process.stdout,
              stderr: process.stderr,
              rows: process.stdout.rows ?? 24,
              cols: process.stdout.columns ?? 80,
            })
            const onResize = () => session.resize(process.stdout.rows ?? 24, process.stdout.columns ?? 80)
            process.stdout.on('resize', onResize)
            exitCode = await session.done
            process.stdout.off('resize', onResize)
          } finally {
            restore()
          }
        } else {
          exitCode = await ssh.stream(interactive ? 'exec "${SHELL:-sh}" -l' : command.join(' '), {
            stdin: process.stdin,
            stdout: process.stdout,
            stderr: process.stderr,
          })
        }
      } finally {
        ssh.close()
        releaseStdin()
      }
    }
    process.exitCode = exitCode < 0 ? 1 : exitCode
    return {session: c.session, via: c.sshPort === null ? 'exec' : 'ssh', exitCode}
  }
}
