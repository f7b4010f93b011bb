import * as z from 'zod'

import {StateError} from '../core/errors.js'
import {STEP_KINDS} from '../core/names.js'
import type {HeldSettings} from '../plan/plan-on-gpu.js'
import {planSchema} from '../plan/plan-schema.js'
import {readJsonFile, writeJsonAtomic} from '../core/json-file.js'
import type {StatePolicy} from '../core/state-policy.js'

/**
 * One file per physical GPU (gpus/<uuid>.json) holds everything the tool changed on it: the GPU-wide
 * leases with the values found before the first session, and every session with its write-ahead journal.
 * It is only written under that GPU's lock, always whole and atomically.
 */

export const SETTINGS = ['persistence', 'mig-mode', 'clocks', 'power-limit'] as const
export type Setting = (typeof SETTINGS)[number]

/** persistence and mig-mode: on/off; clocks: locked MHz or null (unlocked); power-limit: watts */
const settingValue = z.union([z.boolean(), z.number(), z.null()])
export type SettingValue = z.infer<typeof settingValue>

const lease = z.strictObject({
  /** the value in force before the first session changed it; restored when the last holder leaves */
  original: settingValue,
  value: settingValue,
  holders: z.array(z.string()),
})
export type Lease = z.infer<typeof lease>

const journalEntry = z.strictObject({
  kind: z.enum([...STEP_KINDS]),
  /** intended: about to act (written before the GPU is touched); done: acted; undone: reverted */
  state: z.enum(['intended', 'done', 'undone']),
  params: z.record(z.string(), z.unknown()),
  prior: z.record(z.string(), z.unknown()),
  result: z.record(z.string(), z.unknown()).nullable(),
})
export type JournalEntry = z.infer<typeof journalEntry>

/** How the session commands reach the container: the account the entrypoint made, and its workspace. */
const containerAccess = z.strictObject({
  user: z.string(),
  uid: z.number().int(),
  gid: z.number().int(),
  /** host folder mounted at /workspace */
  workspace: z.string().nullable(),
  /** `up --sudo`: the session user has sudo, so root, in the container (absent in records older than the choice) */
  sudo: z.boolean().optional(),
  /** nothing in the container runs as root (a user's own image through the engine): docker exec as uid:gid */
  unprivileged: z.boolean().optional(),
})
export type ContainerAccess = z.infer<typeof containerAccess>

const containerRecord = z.strictObject({
  id: z.string(),
  name: z.string(),
  /** the image reference as given (or the default tag) */
  image: z.string(),
  /** the image ID the container was created from ("sha256:..."); absent in older records */
  imageId: z.string().optional(),
  /** the sshd host key ("ssh-ed25519 AAAA...") `up` saw at its readiness login: later logins accept no other */
  hostKey: z.string().optional(),
  /** null: no sshd published; sessions go through docker exec */
  sshPort: z.number().nullable(),
  /** where to connect (the bind address, or 127.0.0.1 for a wildcard bind) */
  sshHost: z.string().nullable(),
  ...containerAccess.shape,
})
export type ContainerRecord = z.infer<typeof containerRecord>

/** A MIG instance a session made: its profile, then its IDs and UUID as they become known. */
const migSlot = z.strictObject({
  profile: z.string(),
  profileId: z.number(),
  gpuInstanceId: z.number().nullable(),
  computeInstanceId: z.number().nullable(),
  uuid: z.string().nullable(),
})
export type MigSlot = z.infer<typeof migSlot>

/** What every session in the book has: who, which process, its phase, what it made, and its journal. */
const sessionBase = {
  name: z.string(),
  owner: z.strictObject({uid: z.number(), user: z.string()}),
  pid: z.number(),
  hostname: z.string(),
  createdAt: z.string(),
  /** starting and stopping are transitional: found under the lock, they belong to a process that died */
  phase: z.enum(['starting', 'active', 'stopping']),
  /** the MIG instance the session made (rank 0's, with --count N) */
  mig: migSlot.nullable(),
  container: containerRecord.nullable(),
  journal: z.array(journalEntry),
  /** when the session is ended by the reaper (up --ttl, the box's default TTL, extend); absent: never */
  expiresAt: z.string().optional(),
  /** when its users were told it ends soon (TTL or idle reclaim); cleared by extend and by new activity */
  warnedAt: z.string().optional(),
  /** the last time the reaper saw it in use (a compute process of its own on its slice, an ssh login) */
  activeAt: z.string().optional(),
}

/** An `up` session: a plan applied to the GPU (it records no `kind`; a lease hold records `lease`). */
const session = z.strictObject({
  kind: z.literal('up').optional(),
  ...sessionBase,
  target: z.strictObject({key: z.string(), name: z.string()}),
  plan: planSchema,
  /** up --count N on MIG: the instances of this record's further ranks (its first rank's is `mig`) */
  moreSlices: z.array(migSlot).max(63).optional(),
  /**
   * up --count N spread over several GPUs, on the record in the first GPU's book (rank 0's): how many ranks are here,
   * and the ranks the other GPUs' records hold, with their devices once made. That record holds the container, the
   * session's clock and its quota; it turns active last.
   */
  spread: z
    .strictObject({
      ranksHere: z.number().int().min(1),
      parts: z.array(
        z.strictObject({
          gpuUuid: z.string(),
          gpuIndex: z.number().int(),
          firstRank: z.number().int().min(1),
          count: z.number().int().min(1),
          /** each rank's device (its MIG instance's UUID, or the GPU's for an MPS share), null until made */
          devices: z.array(z.string().nullable()),
        }),
      ),
    })
    .optional(),
  /**
   * A part of a session spread over several GPUs: its ranks on this GPU, with their own journal. It belongs to the
   * record of the same name and creation time in the first GPU's book, and is rolled back once that is gone or never became active.
   */
  partOf: z.strictObject({gpuUuid: z.string(), createdAt: z.string(), firstRank: z.number().int().min(1), count: z.number().int().min(1)}).optional(),
})
export type SessionRecord = z.infer<typeof session>

/** Every MIG instance the record made (on this GPU), its first rank's first. */
export function migSlotsOf(s: BookSession): MigSlot[] {
  const more = isLeaseSession(s) ? [] : (s.moreSlices ?? [])
  return [...(s.mig ? [s.mig] : []), ...more]
}

/** The MIG instance of one rank (0 with no --count) in this record; null when the session has no slice, or not here. */
export function slotOfRank(s: SessionRecord, rank: number): MigSlot | null {
  if (!holdsRank(s, rank)) return null
  const here = rank - (s.partOf?.firstRank ?? 0)
  return here === 0 ? s.mig : (s.moreSlices?.[here - 1] ?? null)
}

/** Whether this record (on its GPU) holds the rank: a spread session's records each hold a run of them. */
export function holdsRank(s: SessionRecord, rank: number): boolean {
  const first = s.partOf?.firstRank ?? 0
  return rank >= first && rank < first + ranksHereOf(s)
}

/** The ranks this record holds on its own GPU: all of them, unless the session is spread. */
export function ranksHereOf(s: SessionRecord): number {
  return s.partOf?.count ?? s.spread?.ranksHere ?? rankCountOf(s)
}

/** A part of a spread session (in another GPU's book than its first): listed, counted and ended with that one. */
export function isSessionPart(s: BookSession): boolean {
  return !isLeaseSession(s) && s.partOf !== undefined
}

/**
 * The device one rank of a session runs on, as CUDA names it: its MIG instance, or (an MPS share, a whole GPU) the
 * GPU itself; on a spread session's first record, the other GPUs' ranks as their parts recorded them. Null until made.
 */
export function deviceOfRank(s: SessionRecord, rank: number, gpuUuid: string): string | null {
  const part = s.spread?.parts.find((p) => rank >= p.firstRank && rank < p.firstRank + p.count)
  if (part) return part.devices[rank - part.firstRank] ?? null
  return s.mig ? (slotOfRank(s, rank)?.uuid ?? null) : gpuUuid
}

/** How many devices the session has (up --count N), 1 for a plain one. */
export function rankCountOf(s: SessionRecord): number {
  return s.plan.ranks?.count ?? 1
}

/**
 * A `lease hold`: GPU-wide settings held for a named holder (a Kubernetes DaemonSet, a Slurm job), with no
 * instance and no container (mig and container stay null). Journaled and undone like an `up` session's
 * GPU-wide steps, so a crash mid-hold is rolled back and the last holder of any kind restores the values.
 */
const leaseSession = z.strictObject({
  kind: z.literal('lease'),
  ...sessionBase,
  holder: z.string(),
  hold: z.strictObject({clockMHz: z.number().nullable(), powerLimitW: z.number().nullable()}),
})
export type LeaseSessionRecord = z.infer<typeof leaseSession>

/** Whatever the book holds: an `up` session or a lease hold. */
export type BookSession = SessionRecord | LeaseSessionRecord

/** Who starts a session, and from which process: what every new record begins with. */
export type SessionStarter = {
  readonly owner: {readonly uid: number; readonly user: string}
  readonly pid: number
  readonly hostname: string
}

/** The fields a new session of either kind starts with: phase starting, nothing made yet, an empty journal. */
export function newSessionBase(name: string, starter: SessionStarter) {
  return {
    name,
    owner: {...starter.owner},
    pid: starter.pid,
    hostname: starter.hostname,
    createdAt: new Date().toISOString(),
    phase: 'starting' as const,
    mig: null,
    container: null,
    journal: [],
  }
}

export function isLeaseSession(session: BookSession): session is LeaseSessionRecord {
  return session.kind === 'lease'
}

const book = z.strictObject({
  version: z.literal(1),
  gpu: z.strictObject({uuid: z.string(), name: z.string()}),
  /** kernel boot id when last written: a reboot drops MIG instances and resets clocks and power */
  bootId: z.string().nullable(),
  leases: z.partialRecord(z.enum(SETTINGS), lease),
  sessions: z.record(z.string(), z.discriminatedUnion('kind', [session, leaseSession])),
})
export type GpuBook = z.infer<typeof book>

/**
 * The GPU-wide values in force on this GPU and the sessions (or lease holds) that hold them: what a new plan
 * must live with, for `up` and for `plan --host-gpu` alike.
 */
export function heldSettings(book: GpuBook): HeldSettings {
  const clocks = book.leases.clocks
  const power = book.leases['power-limit']
  return {
    ...(clocks ? {clockMHz: clocks.value as number | null} : {}),
    ...(power ? {powerLimitW: power.value as number} : {}),
    holders: [...new Set([...(clocks?.holders ?? []), ...(power?.holders ?? [])])],
  }
}

export function emptyBook(gpu: {uuid: string; name: string}, bootId: string | null): GpuBook {
  return {version: 1, gpu: {uuid: gpu.uuid, name: gpu.name}, bootId, leases: {}, sessions: {}}
}

/**
 * The GPU's book, or null when the tool never touched it. A damaged file is reported, never dropped
 * (JOURNAL_CORRUPT). A symlink or a non-regular file in its place, or in the engine a file root did not write, is
 * never followed or read: UnsafeFileError.
 */
export function readBook(file: string, trust: StatePolicy): GpuBook | null {
  const read = readJsonFile(file, book, {owner: trust.trustedOwner})
  if (read === null) return null
  if (!read.ok) throw corrupt(file, read.why, read.cause)
  return read.data
}

export function writeBook(file: string, value: GpuBook): void {
  writeJsonAtomic(file, value)
}

function corrupt(file: string, why: string, cause: unknown): StateError {
  return new StateError('JOURNAL_CORRUPT', `the record of what gpu-cosplay changed on this GPU is damaged: ${file}: ${why}`, {
    cause,
    fix: [
      'nothing was changed; inspect or repair the file by hand',
      'or put the GPU back to driver defaults with gpu-cosplay reset --host-gpu N --yes, then move the file away',
    ],
  })
}
