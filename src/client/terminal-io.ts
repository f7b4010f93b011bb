/**
 * The local terminal's side of ssh and exec: raw mode for an interactive session, a pty that follows the
 * window's size, and letting go of stdin afterwards. Free of dockerode, so the --host paths stay light.
 */
import type {SshSession} from '../container/ssh-client.js'
import type {SshTransport} from '../remote/ssh-transport.js'

/** Puts the local terminal in raw mode for an interactive session; returns the undo. */
function rawTerminal(): () => void {
  const stdin = process.stdin
  if (!stdin.isTTY) return () => undefined
  // no resume(): what is typed before the session's pipe() attaches would be read and dropped
  stdin.setRawMode(true)
  return () => {
    stdin.setRawMode(false)
    stdin.pause()
  }
}

/** Runs `attach` with this terminal given to a session: raw mode when tty, stdin let go afterwards. */
export async function attached<T>(tty: boolean, attach: () => Promise<T>): Promise<T> {
  const restore = tty ? rawTerminal() : () => undefined
  try {
    return await attach()
  } finally {
    restore()
    releaseStdin()
  }
}

/** After streaming process.stdin into a session: let the process exit. */
function releaseStdin(): void {
  process.stdin.pause()
  process.stdin.unref?.()
  if (!process.stdin.isTTY) process.stdin.destroy()
}

/** this terminal's size, or 24x80 when it has none */
export function windowSize(): {rows: number; cols: number} {
  return {rows: process.stdout.rows ?? 24, cols: process.stdout.columns ?? 80}
}

/** A remote pty's exit code, its size following this terminal's until then. */
async function followingWindowSize(pty: {resize(rows: number, cols: number): void; readonly done: Promise<number>}): Promise<number> {
  const onResize = () => pty.resize(windowSize().rows, windowSize().cols)
  process.stdout.on('resize', onResize)
  try {
    return await pty.done
  } finally {
    process.stdout.off('resize', onResize)
  }
}

/**
 * On a logged-in ssh session: a login shell (command null) or one command line, with a pty when tty is true,
 * else streamed without one; returns the exit code.
 */
export async function runOverSsh(ssh: SshSession, command: string | null, tty: boolean): Promise<number> {
  const io = {stdin: process.stdin, stdout: process.stdout, stderr: process.stderr}
  return attached(tty, async () =>
    tty ? followingWindowSize(await ssh.interactive(command, {...io, ...windowSize()})) : ssh.stream(command ?? 'exec "${SHELL:-sh}" -l', io),
  )
}

/** One command line on a box with this process's stdio, a pty there when tty is true; returns its exit code. */
export async function streamOnHost(transport: SshTransport, commandLine: string, tty: boolean): Promise<number> {
  return attached(tty, () => {
    const running = transport.stream(commandLine, {
      stdin: process.stdin,
      stdout: process.stdout,
      stderr: process.stderr,
      ...(tty ? {pty: {...windowSize(), term: process.env.TERM ?? 'xterm-256color'}} : {}),
    })
    return tty ? followingWindowSize(running) : running.done
  })
}
