/**
 * --host: the command runs on the GPU box (its own gpu-cosplay, its own journal and locks) and this process
 * only relays: progress on stderr, the --json result back, an error with its code and exit. Ctrl-C here
 * closes the remote command's stdin, which the box takes as its Ctrl-C; a second one leaves at once.
 */
import type {HostAddress} from '../remote/host-url.js'
import {hostsFrom, openHost} from '../remote/open-host.js'
import {forwardedArgv} from '../remote/remote-command-line.js'
import {RemoteError} from '../remote/remote-error.js'
import {handshake, runRemote} from '../remote/run-remote.js'
import type {SshTransport} from '../remote/ssh-transport.js'

export type HostResult<T> = {host: string; result: T}

export type ForwardRequest<T> = {
  spec: string
  commandId: string
  argv: readonly string[]
  version: string
  quiet: boolean
  /** several hosts: one result from each host's; without it only one host is accepted */
  merge?: (perHost: HostResult<T>[]) => T
}

export async function forwardToHosts<T>(request: ForwardRequest<T>): Promise<T> {
  const hosts = hostsFrom(request.spec)
  if (hosts.length > 1 && !request.merge) {
    throw new RemoteError('BAD_HOST', `${request.commandId} runs on one host; --host names ${hosts.length}`, {exit: 2})
  }
  const argv = forwardedArgv(request.commandId, request.argv)
  const cancels: Array<() => void> = []
  let interrupted = false
  const onSigint = () => {
    // nothing runs on a box yet (still connecting), or a second Ctrl-C: leave; the box unwinds on its own
    if (interrupted || cancels.length === 0) process.exit(130)
    interrupted = true
    if (!request.quiet) process.stderr.write('Ctrl-C: asking the box to stop (it finishes the step in flight, then undoes); Ctrl-C again leaves at once\n')
    for (const cancel of cancels) cancel()
  }
  process.on('SIGINT', onSigint)
  try {
    const results = await Promise.all(hosts.map((host) => runOn(host, argv, request, hosts.length > 1, cancels)))
    return request.merge && hosts.length > 1 ? request.merge(results) : results[0].result
  } finally {
    process.off('SIGINT', onSigint)
  }
}

/** One box, connected and past the handshake, for `use`; closed when it settles. */
export async function onHost<T>(host: HostAddress, version: string, use: (transport: SshTransport) => Promise<T>): Promise<T> {
  const transport = await openHost(host)
  try {
    await handshake(transport, version)
    return await use(transport)
  } finally {
    transport.close()
  }
}

async function runOn<T>(host: HostAddress, argv: string[], request: ForwardRequest<T>, prefixed: boolean, cancels: Array<() => void>): Promise<HostResult<T>> {
  return onHost(host, request.version, async (transport) => {
    const {payload, exitCode} = await runRemote(transport, argv, request.version, {
      onStderr: (chunk) => {
        if (request.quiet) return
        const text = chunk.toString('utf8')
        process.stderr.write(prefixed ? text.replace(/^(?=.)/gm, `[${host.label}] `) : text)
      },
      onCancelable: (cancel) => cancels.push(cancel),
    })
    if (exitCode !== 0) process.exitCode = exitCode
    return {host: host.label, result: payload as T}
  })
}

/**
 * For the commands that talk to the box more than once (ssh, exec, ssh-config): the one host --host names,
 * connected and past the handshake; closed when `use` settles.
 */
export async function withHost<T>(
  request: {spec: string; commandId: string; version: string},
  use: (transport: SshTransport, host: HostAddress) => Promise<T>,
): Promise<T> {
  const hosts = hostsFrom(request.spec)
  if (hosts.length > 1) throw new RemoteError('BAD_HOST', `${request.commandId} runs on one host; --host names ${hosts.length}`, {exit: 2})
  return onHost(hosts[0], request.version, (transport) => use(transport, hosts[0]))
}
