/**
 * Every request the engine serves, and the use case that answers it: the whole of what a member can have done as
 * root. The same function answers in-process where no engine stands between (root, a sandbox, a box without an
 * installation), so a member's request and root's own run the same code; who asks comes from the call context the
 * entry point made (the engine's from sudo, serve-engine.ts; the CLI's in perform.ts), never from the request.
 */
import type {DoctorResult} from '../client/doctor-checks.js'
import type {CallContext} from '../core/call-context.js'
import type {DownResult, ExtendResult} from '../client/end-sessions.js'
import type {HostView, QueuedRequest} from '../client/read-host-status.js'
import type {RecoverResult} from '../client/recover-state.js'
import type {RequestIo} from '../client/request-io.js'
import type {SessionReach} from '../client/session-access.js'
import type {SessionSshd} from '../client/session-on-host.js'
import type {UpResult} from '../client/up-session.js'
import type {VerifyDistributedResult} from '../measure/verify-distributed.js'
import type {VerifyPerfResult} from '../measure/verify-perf.js'
import type {VerifyResult} from '../measure/verify-session.js'
import {ENGINE_PROTOCOL, type EngineOp, type RequestOf} from '../system/engine-protocol.js'

export type ExecResult = {session: string; exitCode: number}

/** What each request answers with (the result frame's value). */
export type ResultOf = {
  hello: {version: string; protocol: number}
  up: UpResult
  down: DownResult
  extend: ExtendResult
  status: HostView
  queue: QueuedRequest[]
  session: SessionReach
  'authorize-key': SessionSshd
  exec: ExecResult
  verify: VerifyResult | VerifyPerfResult | VerifyDistributedResult
  recover: RecoverResult
  doctor: DoctorResult
}

type Handlers = {[Op in EngineOp]: (call: CallContext, request: RequestOf<Op>, io: RequestIo, version: string) => Promise<ResultOf[Op]>}

const handlers: Handlers = {
  hello: async (_call, _request, _io, version) => ({version, protocol: ENGINE_PROTOCOL}),
  up: async (call, request, io, version) => (await import('../client/up-session.js')).upSession(call, request, io, version),
  down: async (call, request, io) => (await import('../client/end-sessions.js')).endSessions(call, request, io.progress),
  extend: async (call, request) => (await import('../client/end-sessions.js')).extendSessionBy(call, request),
  status: async (call, request) => (await import('../client/read-host-status.js')).readHostStatus(call, {orphans: request.orphans}),
  queue: async (call) => (await import('../client/read-host-status.js')).readQueue(call),
  session: async (call, request) => (await import('../client/session-access.js')).sessionReach(call, request.name),
  'authorize-key': async (call, request) => {
    const answer = await (await import('../client/session-ssh-config.js')).sshConfigHere(call, request.name ?? undefined, false, request.publicKey)
    return {session: answer.session, hostName: answer.hostName, port: answer.port, user: answer.user, hostKey: answer.hostKey ?? ''}
  },
  exec: async (call, request, io) => {
    const {accessSession, execInSession} = await import('../client/session-access.js')
    const access = accessSession(call, request.name ?? undefined)
    const exitCode = await execInSession(access, request.argv, {
      stdin: io.stdin ?? undefined,
      stdout: io.stdout,
      stderr: io.stderr,
      tty: request.tty,
      terminal: io.terminal,
    })
    return {session: access.container.session, exitCode}
  },
  verify: async (call, request, io) => (await import('../measure/verify-session.js')).verifySession(call, request.name ?? undefined, request, io.progress),
  recover: async (call) => (await import('../client/recover-state.js')).recoverState(call),
  doctor: async (call) => (await import('../client/doctor-checks.js')).checkHost(call),
}

export function handleRequest<Op extends EngineOp>(call: CallContext, request: RequestOf<Op>, io: RequestIo, version: string): Promise<ResultOf[Op]> {
  const handler = handlers[request.op as Op] as (call: CallContext, request: RequestOf<Op>, io: RequestIo, version: string) => Promise<ResultOf[Op]>
  return handler(call, request, io, version)
}
