/**
 * The CLI in a real terminal: a tmux server of its own (its own socket), one window of a given size running the
 * built CLI, and the screen as a person sees it (capture-pane). Tests skip without tmux (.ci/run installs it).
 */
import {spawnSync} from 'node:child_process'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {BIN, type Env, tempDir} from './run-cli.js'

export const hasTmux = spawnSync('tmux', ['-V']).status === 0

export class Terminal {
  private constructor(private readonly socket: string) {}

  /** starts `gpu-cosplay ARGS` in a cols x rows terminal; the shell waits after it ends, so its screen stays */
  static start(args: readonly string[], env: Env, size: {cols: number; rows: number}): Terminal {
    const dir = tempDir('gpu-cosplay-tmux-')
    const script = join(dir, 'run.sh')
    const exports = Object.entries(env)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `export ${k}=${shellQuote(v!)}`)
    // Ctrl-C reaches the CLI (the shell only notes it), then its exit status; the pane stays until the server is killed
    const command = [process.execPath, BIN, ...args].map(shellQuote).join(' ')
    writeFileSync(script, [...exports, 'export TERM=xterm-256color', "trap 'true' INT", `${command}`, 'echo "[exit $?]"', 'exec sleep 600', ''].join('\n'))
    const terminal = new Terminal(join(dir, 'tmux.sock'))
    terminal.tmux(['new-session', '-d', '-x', String(size.cols), '-y', String(size.rows), `sh ${shellQuote(script)}`])
    return terminal
  }

  /** the screen as text, a wrapped line joined again (so a line too wide shows); with escapes: the colours too */
  screen(options: {escapes?: boolean} = {}): string {
    return this.tmux(['capture-pane', '-p', '-J', ...(options.escapes ? ['-e'] : []), '-t', '0'])
  }

  /** the screen once `test` holds (polls; throws with the last screen after timeoutMs) */
  async waitFor(test: (screen: string) => boolean, timeoutMs = 15_000): Promise<string> {
    const deadline = Date.now() + timeoutMs
    let screen = ''
    while (Date.now() < deadline) {
      screen = this.screen()
      if (test(screen)) return screen
      await new Promise((r) => setTimeout(r, 100))
    }
    throw new Error(`the terminal never showed what was expected; last screen:\n${screen}`)
  }

  /** keys as tmux names them, e.g. C-c */
  sendKeys(...keys: string[]): void {
    this.tmux(['send-keys', '-t', '0', ...keys])
  }

  kill(): void {
    spawnSync('tmux', ['-S', this.socket, 'kill-server'])
  }

  private tmux(args: readonly string[]): string {
    const result = spawnSync('tmux', ['-S', this.socket, ...args], {encoding: 'utf8', env: {PATH: process.env.PATH, TERM: 'xterm-256color'}})
    if (result.status !== 0) throw new Error(`tmux ${args.join(' ')}: ${result.stderr}`)
    return result.stdout
  }
}

function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}
