/**
 * How a use case talks to whoever asked while it runs, without printing anything itself: progress lines, the
 * cancel the user asked for (Ctrl-C here, or a cancel frame from a member's client in the engine), and the streams
 * of a command run in a session. The same use case runs in this process or in the root engine: only this differs.
 */
import type {Readable, Writable} from 'node:stream'

import type {Spinner} from './progress.js'

export type Progress = Spinner & {say(line: string): void}

export type CancelToken = {
  /** the first Ctrl-C (or cancel frame): finish the step in flight, then undo */
  readonly requested: boolean
  /** aborted at that first cancel: waits (the queue, a container's readiness) stop on it */
  readonly signal: AbortSignal
}

export type TerminalSize = {readonly rows: number; readonly cols: number}

export type RequestIo = {
  /** null: nothing is shown (--json) */
  readonly progress: Progress | null
  readonly cancel: CancelToken
  /** what the caller types into a command run in the session (exec); null: nothing */
  readonly stdin: Readable | null
  readonly stdout: Writable
  readonly stderr: Writable
  /** the caller's terminal, for a command with a tty */
  readonly terminal: {size(): TerminalSize; onResize(listener: (size: TerminalSize) => void): () => void}
}
