import {homedir} from 'node:os'

import {hostStatus, type HostStatus, type SessionSummary} from '../apply/host-status.js'
import {stateDirToRead} from '../apply/state-dir.js'
import {scanBooks} from '../apply/book-store.js'
import {scanClaims} from '../apply/session-names.js'
import {isLeaseSession} from '../apply/gpu-book.js'
import {clockOf, type IdleSession, idleSessions} from '../apply/session-clock.js'
import {listQueue, type QueuedRequest} from '../apply/wait-queue.js'
import type {CallContext} from '../core/call-context.js'
import {sessionPolicyOf} from '../apply/session-policy.js'
import {reapWhatIsDue} from './reap-due.js'
import type {ContainerState, ContainerStates} from '../container/container-states.js'
import {isCosplayError} from '../core/errors.js'
import type {RefusedFile} from '../core/json-file.js'
import {probeHost} from '../host/probe.js'
import {describeFailure, escapeFailure, type Failure} from '../core/failure.js'
import {localSmi} from './context.js'
import {diedOnThisHost} from '../core/recorded-process.js'

const NO_CONTAINERS: ContainerStates = {reachable: true, bySession: {}}

export type {GpuStatus} from '../apply/host-status.js'
export type {QueuedRequest} from '../apply/wait-queue.js'

export type SessionView = SessionSummary & {
  /** when the session ends by itself (its TTL, moved by extend) and how long is left; null: never */
  expiresAt: string | null
  timeLeftMs: number | null
  /** ms since its last use the reaper saw (a compute process of its own, an ssh login), or since it started */
  idleMs: number
  /** Docker's state of the session's container (running, exited...), 'missing' when recorded but gone, null without one */
  containerState: string | null
  /**
   * The session's process died half-way (starting or stopping, and its pid is gone on this host), or what it
   * made is gone (its GPU instance or its container): `gpu-cosplay recover` cleans up.
   */
  crashed: boolean
}

export type HostView = Omit<HostStatus, 'sessions'> & {
  sessions: SessionView[]
  /** why the GPUs could not be read (nvidia-smi missing, failing, or printing what we cannot parse); absent when they could */
  error?: Failure
  containers: {
    reachable: boolean
    /** why Docker could not be asked, when it could not */
    reason: string | null
    /** containers labelled as a gpu-cosplay session that no session record owns */
    orphans: (ContainerState & {session: string})[]
  }
  /**
   * files in gpus/ and sessions/ named like a book or a name claim that were skipped, never followed or read: a
   * symlink, not a regular file, or (on an installed box) not root's. Absent from a box of an older version.
   */
  refusedFiles?: RefusedFile[]
  /** `up --wait` requests waiting for a slice, in the order they will be served (absent from older boxes) */
  queue?: QueuedRequest[]
  /** sessions idle past idle reclaim's warning lead, and when they will be ended (absent from older boxes) */
  idle?: IdleSession[]
}

/** `status`: one box's view, or with several --host boxes each box's view under its name */
export type StatusResult = HostView | {hosts: Array<HostView & {host: string}>}

/**
 * Books, one probe and one Docker listing. Without nvidia-smi or Docker the records are still shown. Without
 * `orphans` (ps) Docker is asked only when a session has a container: loading its client costs ~150 ms.
 */
export async function readHostStatus(call: CallContext, options: {readonly orphans: boolean} = {orphans: true}): Promise<HostView> {
  const stateDir = stateDirToRead(process.env, homedir())
  await reapWhatIsDue(call, stateDir.dir, async () =>
    (await import('./apply-context.js')).applyContext(call, {mutates: true, reapFirst: false}).then((c) => c.deps),
  )
  let probeFailure: Failure | undefined
  const scan = scanBooks(stateDir.dir, call.policy)
  const books = scan.books.map((b) => b.book)
  const refusedFiles = [...scan.refused, ...scanClaims(stateDir.dir, call.policy).refused]
  const recorded = books.flatMap((book) => Object.values(book.sessions))
  const askDocker = options.orphans || recorded.some((s) => s.container)
  const [probe, containers] = await Promise.all([
    probeHost(localSmi()).catch((error: unknown) => {
      if (!isCosplayError(error)) throw error
      probeFailure = escapeFailure(describeFailure(error))
      return null
    }),
    askDocker ? import('../container/container-states.js').then((m) => m.readContainerStates()) : NO_CONTAINERS,
  ])
  const status = hostStatus(probe, books, stateDir.dir, stateDir.isShared)
  const bySession = containers.reachable ? containers.bySession : {}
  // the process that wrote each session: the `up` or `down` in flight while its phase is starting or stopping. Keyed
  // by GPU too: a lease hold's name (lease:HOLDER) is the same on every GPU it holds.
  const processOf = new Map(books.flatMap((book) => Object.values(book.sessions).map((s) => [`${book.gpu.uuid}/${s.name}`, s] as const)))
  const sessions = status.sessions.map((s) => {
    const containerState = bySession[s.name]?.state ?? (s.container && containers.reachable ? 'missing' : null)
    const owner = processOf.get(`${s.gpuUuid}/${s.name}`)
    const diedHalfWay = s.phase !== 'active' && owner !== undefined && diedOnThisHost(owner)
    const clock = owner && !isLeaseSession(owner) ? clockOf(owner) : null
    return {
      ...s,
      expiresAt: clock?.expiresAt ?? null,
      timeLeftMs: clock?.timeLeftMs ?? null,
      idleMs: clock?.idleMs ?? 0,
      containerState,
      crashed: diedHalfWay || s.instanceMissing || containerState === 'missing',
    }
  })
  const known = new Set(status.sessions.map((s) => s.name))
  return {
    ...status,
    ...(probeFailure === undefined ? {} : {error: probeFailure}),
    sessions,
    containers: {
      reachable: containers.reachable,
      reason: containers.reachable ? null : containers.reason,
      orphans: Object.entries(bySession)
        .filter(([name]) => !known.has(name))
        .map(([session, c]) => ({...c, session})),
    },
    refusedFiles,
    queue: listQueue(stateDir.dir, call.policy),
    idle: idleSessions(stateDir.dir, call.policy, sessionPolicyOf(call.box)),
  }
}

/** `ps --queue`: the requests waiting for a slice, in the order they will be served. Reads only. */
export function readQueue(call: CallContext): QueuedRequest[] {
  return listQueue(stateDirToRead(process.env, homedir()).dir, call.policy)
}
