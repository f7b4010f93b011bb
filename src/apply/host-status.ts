import type {HostProbe} from '../host/types.js'
import {type GpuBook, isLeaseSession, type Lease, type Setting} from './gpu-book.js'

export type SessionSummary = {
  name: string
  /** up: a plan applied (slice, container...); lease: GPU-wide settings held by `gpu-cosplay lease hold` */
  kind: 'up' | 'lease'
  owner: string
  ownerUid: number
  /** the target's key; null for a lease hold */
  target: string | null
  /** what a lease hold holds; null for an up session */
  lease: {holder: string; clockMHz: number | null; powerLimitW: number | null} | null
  phase: string
  createdAt: string
  gpuUuid: string
  gpuIndex: number | null
  mig: {profile: string; gpuInstanceId: number | null; computeInstanceId: number | null; uuid: string | null} | null
  container: {id: string; name: string} | null
  /** the GPU instance this session owns is no longer on the GPU */
  instanceMissing: boolean
}

export type GpuStatus = {
  index: number
  uuid: string
  name: string
  migEnabled: boolean | null
  leases: Partial<Record<Setting, Lease>>
  instances: {gpuInstanceId: number; profile: string; owner: string | null}[]
  /** GPU instances no gpu-cosplay session owns (an administrator's, or left by a crash) */
  orphanInstances: number[]
}

export type HostStatus = {gpus: GpuStatus[]; sessions: SessionSummary[]; stateDir: string; sharedStateDir: boolean}

/** Joins what the GPUs show with what the books record. Reads only; takes no lock. */
export function hostStatus(probe: HostProbe | null, books: readonly GpuBook[], stateDir: string, sharedStateDir: boolean): HostStatus {
  const sessions: SessionSummary[] = books.flatMap((book) =>
    Object.values(book.sessions).map((s) => {
      const live = probe?.gpus.find((g) => g.uuid === book.gpu.uuid) ?? null
      const gi = s.mig?.gpuInstanceId ?? null
      return {
        name: s.name,
        kind: isLeaseSession(s) ? ('lease' as const) : ('up' as const),
        owner: s.owner.user,
        ownerUid: s.owner.uid,
        target: isLeaseSession(s) ? null : s.target.key,
        lease: isLeaseSession(s) ? {holder: s.holder, ...s.hold} : null,
        phase: s.phase,
        createdAt: s.createdAt,
        gpuUuid: book.gpu.uuid,
        gpuIndex: live?.index ?? null,
        mig: s.mig && {profile: s.mig.profile, gpuInstanceId: s.mig.gpuInstanceId, computeInstanceId: s.mig.computeInstanceId, uuid: s.mig.uuid},
        container: s.container && {id: s.container.id, name: s.container.name},
        instanceMissing: live !== null && gi !== null && !live.gpuInstances.some((i) => i.id === gi),
      }
    }),
  )
  const gpus: GpuStatus[] = (probe?.gpus ?? []).map((g) => {
    const book = books.find((b) => b.gpu.uuid === g.uuid)
    const ownerOf = (id: number) => Object.values(book?.sessions ?? {}).find((s) => s.mig?.gpuInstanceId === id)?.name ?? null
    const instances = g.gpuInstances.map((gi) => ({gpuInstanceId: gi.id, profile: gi.profileName, owner: ownerOf(gi.id)}))
    return {
      index: g.index,
      uuid: g.uuid,
      name: g.name,
      migEnabled: g.migMode ? g.migMode.current === 'enabled' : null,
      leases: book?.leases ?? {},
      instances,
      orphanInstances: instances.filter((i) => i.owner === null).map((i) => i.gpuInstanceId),
    }
  })
  return {gpus, sessions, stateDir, sharedStateDir}
}
