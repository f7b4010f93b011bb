import {randomBytes} from 'node:crypto'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import * as z from 'zod'

import {isCosplayError, StateError} from '../core/errors.js'
import {isUnsafeFileError, readJsonFile, writeJsonAtomic} from '../core/json-file.js'
import {isProcessGone} from '../core/process-gone.js'
import {settleDir} from '../core/settle-dir.js'
import {statePolicy} from '../core/state-policy.js'
import {listSessions} from './book-store.js'
import {isLeaseSession} from './gpu-book.js'

/**
 * `up --wait` (issue 20): when no slice that fits is free, the request waits in the box's queue instead of failing.
 * The queue is one file per waiting request (`<state>/queue/<id>.json`, written whole, never through a link), so a
 * waiter holds no lock that blocks anyone's up or down. Each entry names its process (pid, start time, boot): an entry
 * whose process is gone (kill -9) is ignored and removed by the next reader. Order is fair between users: round-robin
 * by user, each user's requests in their order, so one user's third request never goes before another's first.
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
})
export type QueueEntry = z.infer<typeof entrySchema>
export type QueuedRequest = QueueEntry & {readonly position: number}

export function queueDir(stateDir: string): string {
  return path.join(stateDir, 'queue')
}

/** The live entries in the order they are served (position 1 first); entries of dead processes are removed. */
export function listQueue(stateDir: string): QueuedRequest[] {
  const dir = queueDir(stateDir)
  const live: QueueEntry[] = []
  for (const name of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    if (!name.endsWith('.json') || name.startsWith('.')) continue
    const file = path.join(dir, name)
    let read: ReturnType<typeof readJsonFile<QueueEntry>>
    try {
      read = readJsonFile(file, entrySchema, {owner: statePolicy().trustedOwner})
    } catch (error) {
      if (isUnsafeFileError(error)) continue // never followed; doctor's business
      throw error
    }
    if (read?.ok && isAlive(read.data)) live.push(read.data)
    else if (read !== null) fs.rmSync(file, {force: true}) // a waiter killed -9, or a damaged entry: no trace
  }
  // the usual case (ps, status): nobody waits, and the books need not be read for the order
  if (live.length === 0) return []
  const held = new Map<number, number>()
  for (const {session} of listSessions(stateDir)) if (!isLeaseSession(session)) held.set(session.owner.uid, (held.get(session.owner.uid) ?? 0) + 1)
  return fairOrder(live, held).map((entry, i) => ({...entry, position: i + 1}))
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
  readonly who: {readonly uid: number; readonly user: string}
  readonly want: string
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

export const isNoFreeSlot = (error: unknown): boolean => isCosplayError(error) && error.code === 'MIG_NO_FREE_SLOT'

/**
 * Tries at once when nobody waits ahead; else waits its turn. An entry tries when every entry ahead of it has tried
 * since the GPUs' books last changed and found no room (what frees a slice for one may not fit the one ahead), and
 * again whenever a book changes. Its entry is removed however it leaves: served, failed, aborted or timed out.
 */
export async function waitInQueue<T>(stateDir: string, options: WaitOptions<T>): Promise<T> {
  const isNoRoom = options.isNoRoom ?? isNoFreeSlot
  const deadline = options.timeoutMs === undefined ? Infinity : Date.now() + options.timeoutMs
  const entry = enqueue(stateDir, options)
  const file = path.join(queueDir(stateDir), `${entry.id}.json`)
  let missedAt: number | null = null
  let lastShown = ''
  try {
    for (;;) {
      if (options.signal?.aborted) throw new StateError('QUEUE_LEFT', `left the queue for ${options.want}; nothing was changed`, {fix: []})
      if (Date.now() >= deadline) {
        throw new StateError('QUEUE_TIMEOUT', `no slice for ${options.want} came free in time; left the queue, nothing was changed`, {
          fix: ['see who holds the slices: gpu-cosplay status', 'wait longer: up --wait --timeout 2h'],
        })
      }
      const order = listQueue(stateDir)
      const at = order.findIndex((e) => e.id === entry.id)
      const ahead = at < 0 ? [] : order.slice(0, at)
      const shown = `${at + 1}/${order.length}`
      if (shown !== lastShown) {
        lastShown = shown
        options.onProgress?.({position: at + 1, waiting: order.length, want: options.want, ahead: ahead.map((e) => `${e.user}: ${e.want}`)})
      }
      // a book changed, or a new retry period began (the same boundaries for every waiter): a change for everyone
      const retryMs = options.retryMs ?? 5_000
      const changed = Math.max(booksChangedAt(stateDir), Math.floor(Date.now() / retryMs) * retryMs)
      const myTurn = ahead.every((e) => e.missedAt !== undefined && Date.parse(e.missedAt) >= changed)
      if (myTurn && (missedAt === null || changed > missedAt)) {
        try {
          return await options.attempt()
        } catch (error) {
          if (!isNoRoom(error)) throw error
          missedAt = Date.now()
          writeJsonAtomic(file, {...entry, missedAt: new Date(missedAt).toISOString()})
        }
      }
      await sleep(options.pollMs ?? 500, options.signal)
    }
  } finally {
    fs.rmSync(file, {force: true})
  }
}

function enqueue(stateDir: string, options: WaitOptions<unknown>): QueueEntry {
  const dir = queueDir(stateDir)
  const mode = statePolicy().sharedFolderMode
  settleDir(dir, {create: true}, ({created, chmod}) => {
    if (created) chmod(mode)
  })
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
    enqueuedAt: new Date().toISOString(),
  }
  writeJsonAtomic(path.join(dir, `${entry.id}.json`), entry)
  return entry
}

/** The waiter is still the process that wrote the entry: this host, this boot, the pid alive and started when it was. */
function isAlive(entry: QueueEntry): boolean {
  if (entry.hostname !== os.hostname()) return true // another host's waiter is never judged from here
  if (isProcessGone(entry.pid)) return false
  return entry.startTicks === null || startTicksOf(entry.pid) === entry.startTicks
}

export function startTicksOf(pid: number): string | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? null
  } catch {
    return null
  }
}

/** When a GPU's book last changed (a session came or went): the newest mtime in gpus/. */
function booksChangedAt(stateDir: string): number {
  const dir = path.join(stateDir, 'gpus')
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

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, {once: true})
  })
}
