/**
 * Every request the engine serves, and the use case that answers it: the whole of what a member can have done as
 * root. The same function answers in-process where no engine stands between (root, a sandbox, a box without an
 * installation), so a member's request and root's own run the same code; who asks comes from the process
 * (invokingUser), never from the request.
 */
import type {DoctorResult} from '../client/doctor-checks.js'
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

type Handlers = {[Op in EngineOp]: (request: RequestOf<Op>, io: RequestIo, version: string) => Promise<ResultOf[Op]>}

const handlers: Handlers = {
  hello: async (_request, _io, version) => ({version, protocol: ENGINE_PROTOCOL}),
  up: async (request, io, version) => (await import('../client/up-session.js')).upSession(request, io, version),
  down: async (request, io) => (await import('../client/end-sessions.js')).endSessions(request, io.progress),
  extend: async (request) => (await import('../client/end-sessions.js')).extendSessionBy(request),
  status: async (request) => (await import('../client/read-host-status.js')).readHostStatus({orphans: request.orphans}),
  queue: async () => (await import('../client/read-host-status.js')).readQueue(),
  session: async (request) => (await import('../client/session-access.js')).sessionReach(request.name),
  'authorize-key': async (request) => {
    const answer = await (await import('../client/session-ssh-config.js')).sshConfigHere(request.name ?? undefined, false, request.publicKey)
    return {session: answer.session, hostName: answer.hostName, port: answer.port, user: answer.user, hostKey: answer.hostKey ?? ''}
  },
  exec: async (request, io) => {
    const {accessSession, execInSession} = await import('../client/session-access.js')
    const access = accessSession(request.name ?? undefined)
    const exitCode = await execInSession(access, request.argv, {
      stdin: io.stdin ?? undefined,
      stdout: io.stdout,
      stderr: io.stderr,
      tty: request.tty,
      terminal: io.terminal,
    })
    return {session: access.container.session, exitCode}
  },
  verify: async (request, io) => (await import('../measure/verify-session.js')).verifySession(request.name ?? undefined, request, io.progress),
  recover: async () => (await import('../client/recover-state.js')).recoverState(),
  doctor: async () => (await import('../client/doctor-checks.js')).checkHost(),
}

export function handleRequest<Op extends EngineOp>(request: RequestOf<Op>, io: RequestIo, version: string): Promise<ResultOf[Op]> {
  const handler = handlers[request.op as Op] as (request: RequestOf<Op>, io: RequestIo, version: string) => Promise<ResultOf[Op]>
  return handler(request, io, version)
}
