/**
 * What mutating commands share: the state directory, the GPU control (nvidia-smi directly as root,
 * else through `sudo -n`, checked before anything changes), the steps a journal may name, who is asking,
 * and Ctrl-C handling. Loaded lazily by those commands only.
 */
import {readFileSync} from 'node:fs'
import {homedir, hostname} from 'node:os'

import type {BookStoreDeps} from '../apply/book-store.js'
import {resolveStateDir, type StateDir} from '../apply/state-dir.js'
import {reapWhatIsDue} from './reap-due.js'
import {sessionSteps} from '../container/session-steps.js'
import {HostError} from '../core/errors.js'
import type {CallContext} from '../core/call-context.js'
import type {InvokingUser} from '../core/invoking-user.js'
import {LocalExecutor} from '../core/local-executor.js'
import {SmiGpuControl} from '../host/gpu-control.js'
import {checkSmiPrivileges} from '../host/privileges.js'
import {Smi, smiPathFrom} from '../host/smi.js'
import {CANCEL_ON_EOF_ENV} from '../remote/remote-command-line.js'
import type {CancelToken} from './request-io.js'

export type ApplyContext = {
  /** who is asking, as the entry point made it */
  readonly call: CallContext
  readonly stateDir: StateDir
  readonly gpu: SmiGpuControl
  /** what the apply layer's entry points take */
  readonly deps: BookStoreDeps
  readonly user: InvokingUser
  /** the session owner recorded in the book */
  readonly owner: {readonly uid: number; readonly user: string}
  readonly isRoot: boolean
  readonly hostname: string
}

export async function applyContext(call: CallContext, options: {mutates: boolean; reapFirst?: boolean}): Promise<ApplyContext> {
  const stateDir = resolveStateDir(process.env, homedir(), call.policy)
  const executor = new LocalExecutor()
  const smiPath = smiPathFrom(process.env)
  const user = call.caller
  let sudo = false
  if (options.mutates) {
    const privileges = await checkSmiPrivileges(executor, smiPath, process.getuid?.() ?? null)
    if (privileges.mode === 'none') {
      throw new HostError('NO_GPU_PRIVILEGES', `cannot change GPU settings: ${privileges.detail}`, {
        exit: 4,
        fix: [`run as root, or allow passwordless sudo for nvidia-smi (e.g. "%gpu ALL=(root) NOPASSWD: ${smiPath}" in /etc/sudoers.d/gpu-cosplay)`],
      })
    }
    sudo = privileges.mode === 'sudo'
  }
  const gpu = new SmiGpuControl(new Smi(executor, {path: smiPath, sudo}))
  const deps = {gpu, steps: sessionSteps(), stateDir: stateDir.dir, bootId: readBootId(), trust: call.policy}
  // (the reaper's own pass, `system reap`, opens the state without a pass of its own first)
  if (options.mutates && options.reapFirst !== false) await reapWhatIsDue(call, stateDir.dir, async () => deps)
  return {
    call,
    stateDir,
    gpu,
    deps,
    user,
    owner: {uid: user.uid, user: user.user},
    isRoot: user.isRoot,
    hostname: hostname(),
  }
}

function readBootId(): string | null {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim()
  } catch {
    return null
  }
}

/**
 * First Ctrl-C (or SIGTERM): finish the step in flight, then undo. A second one exits at once and
 * leaves the journal to `gpu-cosplay recover`. Run by a --host client (GPU_COSPLAY_CANCEL_ON_EOF=1), EOF on stdin
 * counts as the first Ctrl-C too: ssh without a pty sends no SIGHUP when the client goes away, it only closes stdin.
 */
export function cancelOnSignals(say: (message: string) => void, env: NodeJS.ProcessEnv = process.env): CancelToken & {dispose(): void} {
  const state = {requested: false}
  const aborter = new AbortController()
  const onSignal = (signal: NodeJS.Signals | 'EOF on stdin') => {
    if (state.requested) {
      say(`${signal} again: leaving now; the journal keeps what was done, run gpu-cosplay recover to undo it`)
      process.exit(130)
    }
    state.requested = true
    say(`${signal}: finishing the current step, then undoing (press Ctrl-C again to leave it to gpu-cosplay recover)`)
    aborter.abort()
  }
  process.on('SIGINT', onSignal)
  process.on('SIGTERM', onSignal)
  const watchEof = env[CANCEL_ON_EOF_ENV] === '1'
  const onEof = () => onSignal('EOF on stdin')
  if (watchEof) process.stdin.on('end', onEof).resume()
  return {
    get requested() {
      return state.requested
    },
    signal: aborter.signal,
    dispose() {
      process.off('SIGINT', onSignal)
      process.off('SIGTERM', onSignal)
      if (watchEof) process.stdin.off('end', onEof).pause()
    },
  }
}
