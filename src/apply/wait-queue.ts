import {randomBytes} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import * as z from 'zod'

import {isCosplayError, StateError} from '../core/errors.js'
import {isUnsafeFileError, readJsonFile, writeJsonAtomic} from '../core/json-file.js'
import {NOT_YET, pollUntil} from '../core/poll.js'
import {diedOnThisHost, startTicksOf} from '../core/recorded-process.js'
import {settleDir} from '../core/settle-dir.js'
import type {StatePolicy} from '../core/state-policy.js'
import {booksDir, QUEUE_LOCK, queueDir, queueEntryPath} from '../core/state-layout.js'
import {listSessions} from './book-store.js'
import {isLeaseSession, isSessionPart} from './gpu-book.js'
import {withGpuLock} from './gpu-lock.js'
import {defaultSessionName} from './session-names.js'

/**
 * `up --wait`: when no slice that fits is free, the request waits in the box's queue instead of failing.
 * The queue is one file per waiting request (`<state>/queue/<id>.json`, written whole, never through a link), so a
 * waiter holds no lock that blocks anyone's up or down. Each entry names its process (pid, start time, boot): an entry
 * whose process is gone (kill -9) is ignored and removed by the next reader. Order is fair between users: round-robin
 * by user, each user's requests in their order, so one user's third request never goes before another's first.
 *
 * On a shared box a member may have at most MAX_WAITING_PER_USER requests waiting (root any number), and a
 * waiter must be heard: a timer of its own refreshes `heardAt` every retry period, so one whose process is alive but
 * stalled (Ctrl-Z; a write to its terminal that blocks) stops being heard. Not heard for SKIP_AFTER_PERIODS periods, it
 * is skipped (no longer "ahead" of anyone); for EXPIRE_AFTER_PERIODS, any reader removes it. A waiter that finds its
 * entry gone ends with QUEUE_EXPIRED rather than coming back to its old place: a short stall costs nothing (it is
 * heard again and keeps its place), a long one gives the place up, so teammates who kept waiting are not passed by
 * a request whose user was not there, and no entry is ever written again outside the per-user cap.
 */

const entrySchema = z.strictObject({
  version: z.literal(1),
  id: z.string(),
  uid: z.number(),
  user: z.string(),
  /** what it waits for, in words ("rtx_3090 on GPU 0") */
  want: z.string(),
  pid: z.number(),
  hostname: z.string(),
  /** the process's start time (/proc/PID/stat field 22) and the kernel's boot id: a reused pid is not this waiter */
  startTicks: z.string().nullable(),
  bootId: z.string().nullable(),
  enqueuedAt: z.string(),
  /** the last time it tried and found no room; entries behind it may try meanwhile */
  missedAt: z.string().optional(),
  // Optional, so that entries written before them still read:
  /** the session name asked for, or the one it would get (`<user>-<target>`) */
  name: z.string().optional(),
  /** the target's catalog key */
  target: z.string().optional(),
  /** the last time its waiter said it is there (its timer, every heardEveryMs); absent: judged by its process alone */
  heardAt: z.string().optional(),
  /** its waiter's retry period: how often it is heard */
  heardEveryMs: z.number().int().min(1).max(3_600_000).optional(),
})
export type QueueEntry = z.infer<typeof entrySchema>
/** stalled: not heard for SKIP_AFTER_PERIODS retry periods, so those behind it do not wait for it */
export type QueuedRequest = QueueEntry & {readonly position: number; readonly stalled: boolean}

/** How many requests one member may have waiting at once; root is not capped. */
export const MAX_WAITING_PER_USER = 3
/** An entry not heard for this many of its retry periods is skipped by those behind it. */
export const SKIP_AFTER_PERIODS = 2
/** An entry not heard for this many of its retry periods is removed by any reader. */
export const EXPIRE_AFTER_PERIODS = 4
const DEFAULT_RETRY_MS = 5_000

/**
 * The live entries in the order they are served (position 1 first); entries of dead processes, and entries not heard
 * for EXPIRE_AFTER_PERIODS periods, are removed.
 */
export function listQueue(stateDir: string, trust: StatePolicy, now: number = Date.now()): QueuedRequest[] {
  const dir = queueDir(stateDir)
  const live: QueueEntry[] = []
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (!name.endsWith('.json') || name.startsWith('.')) continue
    const file = path.join(dir, name)
    let read: ReturnType<typeof readJsonFile<QueueEntry>>
    try {
      read = readJsonFile(file, entrySchema, {owner: trust.trustedOwner})
    } catch (error) {
      if (isUnsafeFileError(error)) continue // never followed; doctor's business
      throw error
    }
    if (read?.ok && !diedOnThisHost(read.data) && silentPeriods(read.data, now) < EXPIRE_AFTER_PERIODS) live.push(read.data)
    else if (read !== null) fs.rmSync(file, {force: true}) // a waiter killed -9 or long stalled, or a damaged entry: no trace
  }
  // the usual case (ps, status): nobody waits, and the books need not be read for the order
  if (live.length === 0) return []
  const held = new Map<number, number>()
  for (const {session} of listSessions(stateDir, trust))
    if (!isLeaseSession(session) && !isSessionPart(session)) held.set(session.owner.uid, (held.get(session.owner.uid) ?? 0) + 1)
  return fairOrder(live, held).map((entry, i) => ({...entry, position: i + 1, stalled: silentPeriods(entry, now) >= SKIP_AFTER_PERIODS}))
}

/** How many of its retry periods an entry has gone unheard; 0 for one without a heartbeat (an older waiter's). */
function silentPeriods(entry: QueueEntry, now: number): number {
  if (entry.heardAt === undefined) return 0
  const heardAt = Date.parse(entry.heardAt)
  if (Number.isNaN(heardAt)) return Infinity
  return (now - heardAt) / (entry.heardEveryMs ?? DEFAULT_RETRY_MS)
}

/**
 * Round-robin by user: a request's rank is what its user holds already plus how many of their requests wait before it,
 * so every user's first request goes before anyone's second, and a user just served goes behind those who were not;
 * ties by time of arrival.
 */
export function fairOrder(entries: readonly QueueEntry[], held: ReadonlyMap<number, number> = new Map()): QueueEntry[] {
  const byArrival = [...entries].sort((a, b) => a.enqueuedAt.localeCompare(b.enqueuedAt) || a.id.localeCompare(b.id))
  const seen = new Map<number, number>()
  const ranked = byArrival.map((entry) => {
    const rank = seen.get(entry.uid) ?? held.get(entry.uid) ?? 0
    seen.set(entry.uid, rank + 1)
    return {entry, rank}
  })
  return ranked.sort((a, b) => a.rank - b.rank || byArrival.indexOf(a.entry) - byArrival.indexOf(b.entry)).map((r) => r.entry)
}

export type WaitProgress = {readonly position: number; readonly waiting: number; readonly want: string; readonly ahead: readonly string[]}

export type WaitOptions<T> = {
  /** the state directory's trust (the call context's) */
  readonly trust: StatePolicy
  /** isRoot: not capped (absent: uid 0) */
  readonly who: {readonly uid: number; readonly user: string; readonly isRoot?: boolean}
  readonly want: string
  /** the session name asked for; null: the one it would get, `<user>-<target>` */
  readonly name: string | null
  /** the target's catalog key */
  readonly target: string
  /** one try: bring the session up, or throw; a "no room" error (isNoRoom) means wait on */
  readonly attempt: () => Promise<T>
  readonly isNoRoom?: (error: unknown) => boolean
  /** Ctrl-C: leave the queue, change nothing */
  readonly signal?: AbortSignal
  readonly timeoutMs?: number
  readonly onProgress?: (progress: WaitProgress) => void
  readonly pollMs?: number
  /** try again this often even when no book changed (a slice freed outside gpu-cosplay changes none); default 5 s */
  readonly retryMs?: number
  readonly bootId?: string | null
}

/** No room now, but there could be once others end (up --count N: the GPU holds N idle, not now). */
export const isNoFreeSlot = (error: unknown): boolean => isCosplayError(error) && (error.code === 'MIG_NO_FREE_SLOT' || error.code === 'RANKS_DO_NOT_FIT')

/**
 * Tries at once when nobody waits ahead; else waits its turn. An entry tries when every entry ahead of it has tried
 * since the GPUs' books last changed and found no room (what frees a slice for one may not fit the one ahead), and
 * again whenever a book changes. Its entry is removed however it leaves: served, failed, aborted or timed out.
 */
export async function waitInQueue<T>(stateDir: string, options: WaitOptions<T>): Promise<T> {
  const isNoRoom = options.isNoRoom ?? isNoFreeSlot
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs
  const retryMs = options.retryMs ?? DEFAULT_RETRY_MS
  let entry = await enqueue(stateDir, options, retryMs)
  const file = queueEntryPath(stateDir, entry.id)
  const save = (change: Partial<QueueEntry>) => {
    entry = {...entry, ...change, heardAt: new Date().toISOString()}
    writeJsonAtomic(file, entry)
  }
  // The heartbeat: from a timer, so it goes on while a try runs, and stops only when this process does. An entry
  // already gone is not written again (the loop ends with QUEUE_EXPIRED).
  const heartbeat = setInterval(() => {
    if (fs.existsSync(file)) save({})
  }, retryMs)
  heartbeat.unref()
  let missedAt: number | null = null
  let lastShown = ''
  try {
    return await pollUntil(
      async () => {
        const order = listQueue(stateDir, options.trust)
        const at = order.findIndex((e) => e.id === entry.id)
        if (at < 0) {
          throw new StateError(
            'QUEUE_EXPIRED',
            `this request for ${options.want} lost its place in the queue: it was not heard from for over ${(EXPIRE_AFTER_PERIODS * retryMs) / 1000} s`,
            {
              fix: ['was it stopped (Ctrl-Z) or its output not read? ask again: up --wait'],
            },
          )
        }
        // a stalled waiter ahead is passed by, not waited for
        const ahead = order.slice(0, at).filter((e) => !e.stalled)
        const shown = `${at + 1}/${order.length}`
        if (shown !== lastShown) {
          lastShown = shown
          options.onProgress?.({position: at + 1, waiting: order.length, want: options.want, ahead: ahead.map((e) => `${e.user}: ${e.want}`)})
        }
        // a book changed, or a new retry period began (the same boundaries for every waiter): a change for everyone
        const changed = Math.max(booksChangedAt(stateDir), Math.floor(Date.now() / retryMs) * retryMs)
        const myTurn = ahead.every((e) => e.missedAt !== undefined && Date.parse(e.missedAt) >= changed)
        if (myTurn && (missedAt === null || changed > missedAt)) {
          try {
            return await options.attempt()
          } catch (error) {
            if (!isNoRoom(error)) throw error
            missedAt = Date.now()
            save({missedAt: new Date(missedAt).toISOString()})
          }
        }
        return NOT_YET
      },
      {
        intervalMs: options.pollMs ?? 500,
        deadline,
        signal: options.signal,
        aborted: () => new StateError('QUEUE_LEFT', `left the queue for ${options.want}; nothing was changed`, {fix: []}),
        timedOut: () =>
          new StateError('QUEUE_TIMEOUT', `no slice for ${options.want} came free in time; left the queue, nothing was changed`, {
            fix: ['see who holds the slices: gpu-cosplay status', 'wait longer: up --wait --timeout 2h'],
          }),
      },
    )
  } finally {
    clearInterval(heartbeat)
    fs.rmSync(file, {force: true})
  }
}

/**
 * Writes the request's entry, after counting the member's waiting requests: the count and the write are made under
 * the queue's own lock, so that two requests of one member at the same moment cannot both pass as the third.
 */
async function enqueue(stateDir: string, options: WaitOptions<unknown>, retryMs: number): Promise<QueueEntry> {
  const dir = queueDir(stateDir)
  const mode = options.trust.sharedFolderMode
  settleDir(dir, {create: true}, ({created, chmod}) => {
    if (created) chmod(mode)
  })
  const isRoot = options.who.isRoot ?? options.who.uid === 0
  if (isRoot) return writeEntry(stateDir, options, retryMs)
  return withGpuLock(
    stateDir,
    QUEUE_LOCK,
    async () => {
      const waiting = listQueue(stateDir, options.trust).filter((e) => e.uid === options.who.uid).length
      if (waiting >= MAX_WAITING_PER_USER) {
        throw new StateError('QUEUE_FULL', `${options.who.user} has ${waiting} requests waiting already, the most one user may`, {
          exit: 4,
          fix: ['see them: gpu-cosplay ps --queue', 'wait for one to be served, or end one (Ctrl-C where it waits)'],
        })
      }
      return writeEntry(stateDir, options, retryMs)
    },
    {waitMs: 30_000, trust: options.trust},
  )
}

function writeEntry(stateDir: string, options: WaitOptions<unknown>, retryMs: number): QueueEntry {
  const now = new Date().toISOString()
  const entry: QueueEntry = {
    version: 1,
    id: `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`,
    uid: options.who.uid,
    user: options.who.user,
    want: options.want,
    pid: process.pid,
    hostname: os.hostname(),
    startTicks: startTicksOf(process.pid),
    bootId: options.bootId ?? null,
    enqueuedAt: now,
    name: options.name ?? defaultSessionName(options.who.user, options.target),
    target: options.target,
    heardAt: now,
    heardEveryMs: retryMs,
  }
  writeJsonAtomic(queueEntryPath(stateDir, entry.id), entry)
  return entry
}

/** When a GPU's book last changed (a session came or went): the newest mtime in gpus/. */
function booksChangedAt(stateDir: string): number {
  const dir = booksDir(stateDir)
  let newest = 0
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (!name.endsWith('.json') || name.startsWith('.')) continue
    try {
      newest = Math.max(newest, fs.lstatSync(path.join(dir, name)).mtimeMs)
    } catch {
      // replaced meanwhile: the next look sees it
    }
  }
  return newest
}
