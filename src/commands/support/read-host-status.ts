import {homedir} from 'node:os'

import {hostStatus, type HostStatus, type SessionSummary} from '../../apply/host-status.js'
import {resolveStateDir} from '../../apply/state-dir.js'
import type {ContainerState} from '../../container/container-states.js'
import {isCosplayError} from '../../core/errors.js'
import {probeHost} from '../../host/probe.js'
import {describeFailure, escapeFailure, type Failure} from './base-command.js'
import {localSmi} from './context.js'

export type SessionView = SessionSummary & {
  /** Docker's state of the session's container (running, exited...), 'missing' when recorded but gone, null without one */
  containerState: string | null
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
}

/** Books, one probe and one Docker listing. Without nvidia-smi or Docker the records are still shown. */
export async function readHostStatus(): Promise<HostView> {
  const stateDir = resolveStateDir(process.env, homedir())
  let probeFailure: Failure | undefined
  const [probe, containers] = await Promise.all([
    probeHost(localSmi()).catch((error: unknown) => {
      if (!isCosplayError(error)) throw error
      probeFailure = escapeFailure(describeFailure(error))
      return null
    }),
    import('../../container/container-states.js').then((m) => m.readContainerStates()),
  ])
  const status = hostStatus(probe, stateDir.dir, stateDir.isShared)
  const bySession = containers.reachable ? containers.bySession : {}
  const sessions = status.sessions.map((s) => ({
    ...s,
    containerState: bySession[s.name]?.state ?? (s.container && containers.reachable ? 'missing' : null),
  }))
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
  }
}
