/**
 * Where a command's request is answered: by the root engine for a member of an installed box (through sudo, see
 * system/engine-client.ts), else in this process by the same handler (root, a sandbox, a box without an installation).
 * Commands build the request and render the result; this is the only place that knows which of the two it is.
 */
import type {Readable, Writable} from 'node:stream'

import type {Progress, RequestIo} from '../client/request-io.js'
import type {EngineOp, RequestOf} from '../system/engine-protocol.js'
import type {ResultOf} from './handle-request.js'

export type CommandIo = {
  readonly progress: Progress | null
  readonly stdin?: Readable | null
  readonly stdout?: Writable
  readonly stderr?: Writable
}

/** the requests Ctrl-C cancels (finish the step, then undo); anything else simply stops */
const CANCELLABLE = new Set<EngineOp>(['up', 'down', 'recover'])

export async function perform<Op extends EngineOp>(request: RequestOf<Op> & {readonly op: Op}, io: CommandIo, version: string): Promise<ResultOf[Op]> {
  const {memberOfBox, askEngine} = await import('../system/engine-client.js')
  const box = memberOfBox()
  const cancellable = CANCELLABLE.has(request.op)
  if (box) {
    return (await askEngine<Op>(box, request, {...io, cancellable, onResize: followTerminal})) as ResultOf[Op]
  }
  const [{cancelOnSignals}, {handleRequest}, {callContextHere}] = await Promise.all([
    import('../client/apply-context.js'),
    import('./handle-request.js'),
    import('../core/call-context.js'),
  ])
  // answered here: who asks is this process's user (root at a shell of an installed box acts on its configuration)
  const call = await callContextHere()
  const say = (line: string) => io.progress?.say(line)
  const cancel = cancellable ? cancelOnSignals(say) : {requested: false, signal: new AbortController().signal, dispose: () => undefined}
  const local: RequestIo = {
    progress: io.progress,
    cancel,
    stdin: io.stdin ?? null,
    stdout: io.stdout ?? process.stdout,
    stderr: io.stderr ?? process.stderr,
    terminal: {size: terminalSize, onResize: followTerminal},
  }
  try {
    return await handleRequest(call, request, local, version)
  } finally {
    cancel.dispose()
  }
}

function terminalSize(): {rows: number; cols: number} {
  return {rows: process.stdout.rows ?? 24, cols: process.stdout.columns ?? 80}
}

function followTerminal(listener: (size: {rows: number; cols: number}) => void): () => void {
  const onResize = () => listener(terminalSize())
  process.stdout.on('resize', onResize)
  return () => process.stdout.off('resize', onResize)
}
