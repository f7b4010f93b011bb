import type {HostGpu, HostProbe} from '../host/types.js'
import {type GpuBook, holdsRank, isLeaseSession, isSessionPart, type Lease, migSlotsOf, type SessionRecord, type Setting, slotOfRank} from './gpu-book.js'

/** Memory slices a GPU instance occupies: the GI placement nvidia-smi reports (`mig -lgi`), start and size in slices. */
export type SlicePlacement = {start: number; size: number}

/** What an `up` session was given, from its plan: the numbers `status` draws and `metrics` exports. */
export type SessionShaping = {
  /** SMs the session's programs can use: the slice's, or fewer under MPS */
  smCount: number
  /** the SMs of its MIG slice; null when it holds the whole GPU */
  sliceSmCount: number | null
  /** MPS active thread percentage; null without MPS */
  mpsThreadPercentage: number | null
  vramCapMiB: number
  /** the limit the driver enforces (MPS pinned limit, else its MIG slice); null: only the costume's cap (older plans: the pinned limit) */
  hardLimitMiB: number | null
  /** the GPU-wide clock lock this session asked for (and shares with every tenant); null when it took none */
  clockMHz: number | null
  /** the GPU-wide power limit this session asked for; null when it took none */
  powerLimitW: number | null
  /** what the plan expects of the slice, and the target's figures (bf16 null: the target has none) */
  expected: {fp32Tflops: number; bf16Tflops: number; bandwidthGBs: number}
  target: {fp32Tflops: number; bf16Tflops: number | null; bandwidthGBs: number}
}

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
  /** up --count N: each rank's device (MIG instance IDs null on a GPU without MIG); absent for one device */
  ranks?: {rank: number; uuid: string | null; gpuIndex: number | null; gpuInstanceId: number | null; computeInstanceId: number | null}[]
  container: {id: string; name: string} | null
  /** the GPU instance this session owns is no longer on the GPU */
  instanceMissing: boolean
  /** the memory slices its GPU instance occupies, as the GPU reports them; null without a live instance */
  placement: SlicePlacement | null
  /** what its plan gave it; null for a lease hold */
  shaping: SessionShaping | null
  /** memory its instance's compute apps use (nvidia-smi); null without a live MIG instance or a process listing */
  memoryUsedMiB: number | null
}

export type GpuStatus = {
  index: number
  uuid: string
  name: string
  migEnabled: boolean | null
  leases: Partial<Record<Setting, Lease>>
  instances: {gpuInstanceId: number; profile: string; owner: string | null; placement: SlicePlacement}[]
  /** GPU instances no gpu-cosplay session owns (an administrator's, or left by a crash) */
  orphanInstances: number[]
  /** how many memory slices the GPU has with MIG on (8 on A100/H100/H200, 4 on A30); null with MIG off or unknown */
  memorySlices: number | null
  /** the memory slices no GPU instance occupies; empty with MIG off */
  freeMemorySlices: number[]
  /** the largest MIG profile that could be created now (mig -lgip Free > 0); null when none or MIG is off */
  largestFreeProfile: string | null
  /** the power limit in force (W) */
  powerLimitW: number | null
  /** the clock lock gpu-cosplay holds on it (MHz); null when unlocked */
  clockLockedMHz: number | null
}

export type HostStatus = {gpus: GpuStatus[]; sessions: SessionSummary[]; stateDir: string; sharedStateDir: boolean}

/** Joins what the GPUs show with what the books record. Reads only; takes no lock. */
export function hostStatus(probe: HostProbe | null, books: readonly GpuBook[], stateDir: string, sharedStateDir: boolean): HostStatus {
  // a spread session is listed once, by its first record; its parts give their ranks' devices
  const partsOf = (s: SessionRecord) =>
    books.flatMap((b) =>
      Object.values(b.sessions)
        .filter((p): p is SessionRecord => isSessionPart(p) && p.name === s.name && (p as SessionRecord).partOf!.createdAt === s.createdAt)
        .map((session) => ({session, gpuUuid: b.gpu.uuid})),
    )
  const sessions: SessionSummary[] = books.flatMap((book) =>
    Object.values(book.sessions)
      .filter((s) => !isSessionPart(s))
      .map((s) => {
        const liveOf = (uuid: string) => probe?.gpus.find((g) => g.uuid === uuid) ?? null
        const live = liveOf(book.gpu.uuid)
        const gi = s.mig?.gpuInstanceId ?? null
        const gis = migSlotsOf(s).map((slot) => slot.gpuInstanceId)
        // each GPU a spread session holds slices on, with its instances there
        const held = [
          {live, gis},
          ...(isLeaseSession(s) ? [] : partsOf(s)).map((p) => ({live: liveOf(p.gpuUuid), gis: migSlotsOf(p.session).map((slot) => slot.gpuInstanceId)})),
        ]
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
          // up --count N: every rank's instance (rank 0's is also `mig`); one device: absent
          ...(isLeaseSession(s) || !s.plan.ranks
            ? {}
            : {
                ranks: ranksOf(s, book.gpu.uuid, partsOf(s), probe),
              }),
          container: s.container && {id: s.container.id, name: s.container.name},
          instanceMissing: held.some((h) => h.live !== null && h.gis.some((id) => id !== null && !h.live!.gpuInstances.some((i) => i.id === id))),
          ...liveUse(live, gi, held),
          shaping: isLeaseSession(s) ? null : shapingOf(s),
        }
      }),
  )
  const gpus: GpuStatus[] = (probe?.gpus ?? []).map((g) => {
    const book = books.find((b) => b.gpu.uuid === g.uuid)
    const ownerOf = (id: number) => Object.values(book?.sessions ?? {}).find((s) => migSlotsOf(s).some((slot) => slot.gpuInstanceId === id))?.name ?? null
    const instances = g.gpuInstances.map((gi) => ({
      gpuInstanceId: gi.id,
      profile: gi.profileName,
      owner: ownerOf(gi.id),
      placement: {start: gi.placementStart, size: gi.placementSize},
    }))
    const memorySlices = memorySlicesOf(g)
    const taken = new Set(instances.flatMap((i) => Array.from({length: i.placement.size}, (_, k) => i.placement.start + k)))
    return {
      index: g.index,
      uuid: g.uuid,
      name: g.name,
      migEnabled: g.migMode ? g.migMode.current === 'enabled' : null,
      leases: book?.leases ?? {},
      instances,
      orphanInstances: instances.filter((i) => i.owner === null).map((i) => i.gpuInstanceId),
      memorySlices,
      freeMemorySlices: memorySlices === null ? [] : Array.from({length: memorySlices}, (_, k) => k).filter((k) => !taken.has(k)),
      largestFreeProfile: largestFreeProfile(g),
      powerLimitW: g.power.currentW,
      clockLockedMHz: typeof book?.leases.clocks?.value === 'number' ? book.leases.clocks.value : null,
    }
  })
  return {gpus, sessions, stateDir, sharedStateDir}
}

/**
 * Where rank 0's instance sits, and the memory the processes on all of the session's instances use, on every GPU it
 * holds (under MPS, NVML counts them on the server).
 */
function liveUse(
  live: HostGpu | null,
  gi: number | null,
  held: readonly {readonly live: HostGpu | null; readonly gis: readonly (number | null)[]}[],
): {placement: SlicePlacement | null; memoryUsedMiB: number | null} {
  const instance = live?.gpuInstances.find((i) => i.id === gi)
  if (!live || !instance) return {placement: null, memoryUsedMiB: null}
  const placement = {start: instance.placementStart, size: instance.placementSize}
  if (held.some((h) => !h.live || h.live.unavailable.includes('processes'))) return {placement, memoryUsedMiB: null}
  const mine = held.flatMap((h) => h.live!.processes.filter((p) => p.gpuInstanceId !== null && h.gis.includes(p.gpuInstanceId)))
  if (mine.some((p) => p.usedMiB === null)) return {placement, memoryUsedMiB: null}
  return {placement, memoryUsedMiB: mine.reduce((sum, p) => sum + (p.usedMiB ?? 0), 0)}
}

function shapingOf(s: SessionRecord): SessionShaping {
  const plan = s.plan
  return {
    smCount: plan.smCount,
    sliceSmCount: plan.mig?.smCount ?? null,
    mpsThreadPercentage: plan.mps?.activeThreadPercentage ?? null,
    vramCapMiB: plan.vramCapMiB,
    hardLimitMiB: plan.memory?.hardLimitMiB ?? plan.mps?.pinnedMemLimitMiB ?? null,
    clockMHz: plan.gpuWide.clockLock ? plan.clockMHz : null,
    powerLimitW: plan.gpuWide.powerLimit ? plan.powerLimitW : null,
    expected: {fp32Tflops: plan.expected.fp32Tflops, bf16Tflops: plan.expected.bf16Tflops, bandwidthGBs: plan.expected.bandwidthGBs},
    target: {fp32Tflops: plan.target.fp32Tflops, bf16Tflops: plan.target.bf16Tflops, bandwidthGBs: plan.target.bandwidthGBs},
  }
}

/**
 * A MIG GPU's memory slices. `mig -lgip` does not print them, but its whole-GPU profile (the one with the most
 * memory) tells: 7g on A100/H100/H200 spans 8 memory slices, 4g on A30 spans 4. A live instance's placement
 * reaching further wins.
 */
export function memorySlicesOf(gpu: HostGpu): number | null {
  if (gpu.migMode?.current !== 'enabled') return null
  const reach = Math.max(0, ...gpu.gpuInstances.map((i) => i.placementStart + i.placementSize))
  const whole = [...(gpu.migProfiles ?? [])].sort((a, b) => b.memoryGiB - a.memoryGiB)[0]
  const computeSlices = whole ? Number(/^(\d+)g/.exec(whole.name)?.[1] ?? 0) : 0
  const fromProfile = computeSlices === 7 ? 8 : computeSlices
  const slices = Math.max(reach, fromProfile)
  return slices > 0 ? slices : null
}

/** The biggest profile with a free placement (most memory, then most SMs; a plain profile before its +me twin). */
function largestFreeProfile(gpu: HostGpu): string | null {
  const free = (gpu.migProfiles ?? []).filter((p) => p.free > 0)
  free.sort((a, b) => b.memoryGiB - a.memoryGiB || b.smCount - a.smCount || a.name.length - b.name.length)
  return free[0]?.name ?? null
}

/** Each rank's device, from the record of the GPU it is on (a spread session's parts hold theirs). */
function ranksOf(
  s: SessionRecord,
  gpuUuid: string,
  parts: readonly {session: SessionRecord; gpuUuid: string}[],
  probe: HostProbe | null,
): NonNullable<SessionSummary['ranks']> {
  const records = [{session: s, gpuUuid}, ...parts]
  return Array.from({length: s.plan.ranks!.count}, (_, rank) => {
    const here = records.find((r) => holdsRank(r.session, rank))
    const slot = here ? slotOfRank(here.session, rank) : null
    const uuid = here ? (here.session.mig ? (slot?.uuid ?? null) : here.gpuUuid) : null
    const gpuIndex = here ? (probe?.gpus.find((g) => g.uuid === here.gpuUuid)?.index ?? here.session.plan.host.index) : null
    return {rank, uuid, gpuIndex, gpuInstanceId: slot?.gpuInstanceId ?? null, computeInstanceId: slot?.computeInstanceId ?? null}
  })
}
