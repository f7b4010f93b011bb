/**
 * One gpu-cosplay command on a GPU box: the handshake (`remote info --json`: protocol and version), then the
 * command itself with --json, its stderr streamed, its JSON result or error returned as if it ran here.
 */
import type {ExitCode} from '../core/errors.js'
import {REMOTE_PROTOCOL, remoteCommandLine} from './remote-command-line.js'
import {RemoteError} from './remote-error.js'
import type {RemoteExecResult, SshTransport} from './ssh-transport.js'

export type RemoteInfo = {protocol: number; version: string; node: string}

export type RemoteRunIo = {
  onStderr?: (chunk: Buffer) => void
  /** called with a function that closes the remote command's stdin (= Ctrl-C there) */
  onCancelable?: (cancel: () => void) => void
}

export async function handshake(transport: SshTransport, version: string): Promise<RemoteInfo> {
  const label = transport.endpoint.label
  const result = await transport.exec(remoteCommandLine(['remote', 'info', '--json'], version)).done
  if (result.exitCode === 127) {
    throw new RemoteError('REMOTE_NOT_INSTALLED', `gpu-cosplay is not installed on ${label} (neither ${version} in the cache nor on PATH)`, {
      fix: [`gpu-cosplay remote install --host ${label}`],
    })
  }
  const info = parseJson(result) as Partial<RemoteInfo> | null
  if (!info || typeof info.version !== 'string' || typeof info.protocol !== 'number') {
    throw new RemoteError('REMOTE_HANDSHAKE_FAILED', `gpu-cosplay on ${label} did not answer the handshake (exit ${result.exitCode ?? result.signal})`, {
      fix: [`an older gpu-cosplay may be on its PATH: gpu-cosplay remote install --host ${label}`],
    })
  }
  if (info.protocol !== REMOTE_PROTOCOL || info.version !== version) {
    throw new RemoteError(
      'REMOTE_VERSION_MISMATCH',
      `${label} runs gpu-cosplay ${info.version} (protocol ${info.protocol}); this one is ${version} (protocol ${REMOTE_PROTOCOL})`,
      {fix: [`gpu-cosplay remote install --host ${label} (puts ${version} beside the other, in a per-version folder)`]},
    )
  }
  return info as RemoteInfo
}

/**
 * Runs argv (already forwardedArgv) and returns the remote --json payload with the remote exit status (doctor,
 * status and verify report with a non-zero one); a remote failure keeps its code and exit.
 */
export async function runRemote(
  transport: SshTransport,
  argv: readonly string[],
  version: string,
  io: RemoteRunIo = {},
): Promise<{payload: unknown; exitCode: number}> {
  const label = transport.endpoint.label
  const running = transport.exec(remoteCommandLine(argv, version), {onStderr: io.onStderr})
  io.onCancelable?.(() => running.endInput())
  const result = await running.done
  return payloadOf(result, label, argv[0])
}

/**
 * What a gpu-cosplay run with --json answered: its payload with its exit status (doctor, status and verify report
 * with a non-zero one), or its failure thrown with its code and exit. For a box reached over ssh and for this box's
 * engine alike.
 */
export function payloadOf(
  result: Pick<RemoteExecResult, 'stdout' | 'exitCode' | 'signal'>,
  label: string,
  command: string,
  {prefix = true}: {prefix?: boolean} = {},
): {payload: unknown; exitCode: number} {
  const payload = parseJson(result)
  // a failure prints exactly {error: {...}}; status has an `error` field beside its view
  const isFailure = payload !== null && typeof payload === 'object' && Object.keys(payload).length === 1 && 'error' in payload
  if (payload !== null && !isFailure && result.exitCode !== null) return {payload, exitCode: result.exitCode}
  const error = isFailure ? (payload as {error: {code?: unknown; message?: unknown; fix?: unknown; exit?: unknown}}).error : null
  if (error && typeof error.code === 'string' && typeof error.message === 'string') {
    const fix = Array.isArray(error.fix) ? error.fix.filter((line): line is string => typeof line === 'string') : []
    const exit = (typeof error.exit === 'number' ? error.exit : (result.exitCode ?? 1)) as ExitCode
    throw new RemoteError(error.code, prefix ? `${label}: ${error.message}` : error.message, {fix, exit})
  }
  throw new RemoteError('REMOTE_COMMAND_FAILED', `gpu-cosplay ${command} on ${label} ended without a result (exit ${result.exitCode ?? result.signal})`, {
    fix: ['rerun with DEBUG=gpu-cosplay* for details'],
  })
}

function parseJson(result: Pick<RemoteExecResult, 'stdout'>): unknown {
  const text = result.stdout.trim()
  if (text === '') return null
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}
