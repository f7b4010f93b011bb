import fs from 'node:fs'
import path from 'node:path'

import {type CosplayError, isCosplayError} from '../core/errors.js'
import {isUnsafeFileError, type RefusedFile, refusedFile} from '../core/json-file.js'
import {diedOnThisHost} from '../core/recorded-process.js'
import {bookPath, booksDir} from '../core/state-layout.js'
import type {StatePolicy} from '../core/state-policy.js'
import type {HostGpu} from '../host/types.js'
import {type EngineDeps, type Persist, recoverAbandoned, stepContext} from './journal.js'
import {type BookSession, emptyBook, type GpuBook, isLeaseSession, isSessionPart, readBook, type SessionRecord, writeBook} from './gpu-book.js'
import {type HeldLock, type TakenLock, takeGpuLock, withGpuLock} from './gpu-lock.js'
import {forgetIfRebooted} from './reboot.js'
import {readClaims, releaseName} from './session-names.js'
import {settleUnheldLeases} from './steps/lease-steps.js'
import type {StepContext} from './steps/step.js'

/**
 * The per-GPU books in the state directory (gpus/<uuid>.json): listing them without a lock (they are
 * replaced atomically), and opening one for a change with the sequence every mutation needs.
 */

export type SessionLocation = {readonly session: BookSession; readonly gpuUuid: string; readonly gpuName: string}

export function listBooks(stateDir: string, trust: StatePolicy): {file: string; book: GpuBook}[] {
  return scanBooks(stateDir, trust).books
}

export type BookScan = {
  readonly books: {file: string; book: GpuBook}[]
  /** named like a book but never read: a symlink, not a regular file, or (engine) not root's */
  readonly refused: RefusedFile[]
  /** skipCorrupt: the damaged books' errors (JOURNAL_CORRUPT), each naming its file and fix */
  readonly damaged: CosplayError[]
}

/**
 * Every book, and what was skipped rather than followed: one planted file must not stop everybody's commands (a
 * command for the GPU it names still fails, in withBook). A real book that is damaged still throws JOURNAL_CORRUPT.
 */
export function scanBooks(stateDir: string, trust: StatePolicy, options: {readonly skipCorrupt?: boolean} = {}): BookScan {
  const dir = booksDir(stateDir)
  const scan: BookScan = {books: [], refused: [], damaged: []}
  if (!fs.existsSync(dir)) return scan
  for (const name of fs.readdirSync(dir).sort()) {
    if (!name.endsWith('.json') || name.startsWith('.')) continue
    const file = path.join(dir, name)
    try {
      const book = readBook(file, trust)
      if (book) scan.books.push({file, book})
    } catch (error) {
      if (isUnsafeFileError(error)) scan.refused.push(refusedFile(error))
      else if (options.skipCorrupt && isCosplayError(error) && error.code === 'JOURNAL_CORRUPT') scan.damaged.push(error)
      else throw error
    }
  }
  return scan
}

/**
 * Every session in the books that can be read, and the damaged books' errors: for commands that act on named
 * sessions (down), which a damaged book of another GPU must not stop; one not found may be on a damaged GPU.
 */
export function listReadableSessions(stateDir: string, trust: StatePolicy): {sessions: SessionLocation[]; damaged: CosplayError[]; readable: Set<string>} {
  const scan = scanBooks(stateDir, trust, {skipCorrupt: true})
  return {sessions: scan.books.flatMap(({book}) => sessionsIn(book)), damaged: scan.damaged, readable: new Set(scan.books.map(({book}) => book.gpu.uuid))}
}

/**
 * The session names the readable books record (but the book of `except`, which its caller holds open), and how many
 * books are damaged (one may record any name); null when the books cannot be read at all.
 */
export function recordedNames(stateDir: string, trust: StatePolicy, except?: string): {names: Set<string>; damaged: number} | null {
  try {
    const scan = scanBooks(stateDir, trust, {skipCorrupt: true})
    const names = new Set(scan.books.filter(({book}) => book.gpu.uuid !== except).flatMap(({book}) => Object.keys(book.sessions)))
    return {names, damaged: scan.damaged.length}
  } catch {
    return null
  }
}

/** Every session in every GPU book. */
export function listSessions(stateDir: string, trust: StatePolicy): SessionLocation[] {
  return listBooks(stateDir, trust).flatMap(({book}) => sessionsIn(book))
}

function sessionsIn(book: GpuBook): SessionLocation[] {
  return Object.values(book.sessions).map((session) => ({session, gpuUuid: book.gpu.uuid, gpuName: book.gpu.name}))
}

export type BookStoreDeps = EngineDeps & {
  readonly stateDir: string
  readonly bootId: string | null
}

/** A GPU's book opened under its lock, brought up to date with the GPU. */
export type OpenBook = {
  readonly book: GpuBook
  /** the GPU as read under the lock (again after rolling back dead sessions) */
  readonly live: HostGpu
  readonly persist: Persist
  /** sessions of dead processes rolled back (or lost to a reboot) before the caller ran */
  readonly recovered: readonly string[]
  /** things the user should know: reboots, recovery, MIG left on... */
  readonly notes: string[]
  /** a damaged book moved aside (only with onCorrupt: 'move-aside') */
  readonly movedAside: string | null
  contextFor(session: BookSession): StepContext
}

export type WithBookOptions = {
  /** 'move-aside': start from an empty book instead of failing on a damaged one (reset) */
  readonly onCorrupt?: 'throw' | 'move-aside'
  /**
   * 'settings': read the GPU with `-q` alone (live.gpuInstances/migProfiles are not read). For callers whose
   * steps list instances themselves when they need them (tear-down): every read here is made under the lock.
   */
  readonly read?: 'full' | 'settings'
  /** `-L` showed MIG devices on this GPU: its MIG tables are read at the same time as `-q` */
  readonly migExpected?: boolean
}

/** What a user is told of the sessions opening a book rolled back first (their processes had died half-way). */
export function rolledBackNotes(recovered: readonly string[]): string[] {
  return recovered.map((name) => `rolled back the half-done session ${name} of a process that died`)
}

/**
 * The sequence every mutation of a GPU shares, written once: take the GPU's lock, read its book, read the
 * GPU, drop the records a reboot made void, roll back what dead processes left half-done, let the caller
 * act, put back GPU-wide settings nobody holds any more, save.
 */
export async function withBook<T>(
  deps: BookStoreDeps,
  /** index: from a listing just made (-L); without it, the one this boot's sessions in the book ran at, else -L is read */
  gpu: {readonly uuid: string; readonly name: string; readonly index?: number},
  act: (open: OpenBook) => Promise<T>,
  options: WithBookOptions = {},
): Promise<T> {
  return withGpuLock(
    deps.stateDir,
    gpu.uuid,
    async (lock) => {
      const open = await openBook(deps, gpu, lock, options)
      const result = await act(open)
      await closeBook(deps, open)
      return result
    },
    {trust: deps.trust},
  )
}

/** Several GPUs' books open under their locks, until the caller closes or releases them (openBooks). */
export type HeldBooks = {
  /** the books opened, in the order the GPUs were given (a GPU left out is not among them) */
  readonly opens: readonly OpenBook[]
  /** leaveOutUnreadable: the GPUs whose book or GPU could not be read, and why; their locks are let go already */
  readonly leftOut: readonly {readonly gpu: {readonly uuid: string; readonly name: string; readonly index?: number}; readonly reason: string}[]
  /** Closes these books now, as at the end, and lets go of their locks: GPUs the caller has seen and will not change. */
  letGo(opens: readonly OpenBook[]): Promise<void>
  /** Success: the books still open closed as at the end of any change (closeBook), then every lock let go of. */
  close(): Promise<void>
  /** Every lock let go of, the books as they are (after a failure: what was undone is saved already). Idempotent. */
  release(): Promise<void>
}

export type OpenBooksOptions = {
  readonly optionsFor?: (gpu: {readonly uuid: string}) => WithBookOptions
  /** a GPU whose book is damaged or whose read fails is left out (HeldBooks.leftOut) rather than failing the call */
  readonly leaveOutUnreadable?: boolean
  /** ends a wait for a lock (Ctrl-C) */
  readonly signal?: AbortSignal
}

/**
 * Several GPUs' books open at once (a session spread over them): their locks taken one by one in the order of their
 * UUIDs, the one order every process takes them in, so two such calls never wait on each other in a circle; then,
 * with every lock held, the books read and brought up to date side by side (one GPU read's time, not N). The caller
 * may let go of the GPUs it will not change before it acts on the others, so that nobody waits on them meanwhile,
 * and ends with close() (it changed them) or release() (it failed); on a failure here every lock is let go of.
 */
export async function openBooks(
  deps: BookStoreDeps,
  gpus: readonly {readonly uuid: string; readonly name: string; readonly index?: number}[],
  {optionsFor = () => ({}), leaveOutUnreadable = false, signal}: OpenBooksOptions = {},
): Promise<HeldBooks> {
  const ordered = [...gpus].sort((a, b) => (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0))
  const taken: (TakenLock | null)[] = []
  const leftOut: {gpu: (typeof gpus)[number]; reason: string}[] = []
  const release = async () => {
    for (const t of taken) await t?.release()
  }
  try {
    for (const gpu of ordered) {
      try {
        // a GPU some other command holds for long is one to go around, not to wait on with the others' locks held
        taken.push(await takeGpuLock(deps.stateDir, gpu.uuid, {...(leaveOutUnreadable ? {waitMs: BUSY_GPU_WAIT_MS} : {}), signal, trust: deps.trust}))
      } catch (error) {
        if (!leaveOutUnreadable || !isCosplayError(error) || error.code !== 'GPU_LOCKED') throw error
        taken.push(null)
        leftOut.push({gpu, reason: error.message})
      }
    }
    // every open settles before a failure lets go of the locks: none goes on recovering a GPU it no longer holds
    const settled = await Promise.allSettled(ordered.map(async (gpu, k) => (taken[k] ? openBook(deps, gpu, taken[k].lock, optionsFor(gpu)) : null)))
    const lockOf = new Map<OpenBook, TakenLock>()
    for (const [k, s] of settled.entries()) {
      if (s.status === 'fulfilled') {
        if (s.value) lockOf.set(s.value, taken[k]!)
      } else if (leaveOutUnreadable && isLeavable(s.reason)) {
        leftOut.push({gpu: ordered[k], reason: (s.reason as Error).message})
        await taken[k]!.release()
      } else throw s.reason
    }
    const open = new Set(lockOf.keys())
    const letGo = async (opens: readonly OpenBook[]) => {
      for (const o of opens) {
        if (!open.delete(o)) continue
        // a GPU looked at and left alone gets no book it did not have
        await closeBook(deps, o, {keepIfEmpty: false})
        lockOf.get(o)!.lock.assertHeld()
        await lockOf.get(o)!.release()
      }
    }
    const opens = gpus.flatMap((gpu) => {
      const s = settled[ordered.indexOf(gpu)]
      return s.status === 'fulfilled' && s.value ? [s.value] : []
    })
    return {
      opens,
      leftOut,
      letGo,
      async close() {
        try {
          await letGo([...open])
        } finally {
          await release()
        }
      },
      release,
    }
  } catch (error) {
    await release()
    throw error
  }
}

/** How long a spread up waits for each GPU's lock before it goes around that GPU (a short change takes about a second). */
const BUSY_GPU_WAIT_MS = 5_000

/** What leaves one GPU out of a spread rather than failing it: what the GPU or its book says, never a bug or a lost lock. */
function isLeavable(error: unknown): boolean {
  return isUnsafeFileError(error) || (isCosplayError(error) && error.code !== 'GPU_LOCK_LOST')
}

/** Under the GPU's lock: its book read, the GPU read, what a reboot voided dropped, what dead processes left rolled back. */
async function openBook(
  deps: BookStoreDeps,
  gpu: {readonly uuid: string; readonly name: string; readonly index?: number},
  lock: HeldLock,
  options: WithBookOptions,
): Promise<OpenBook> {
  const file = bookPath(deps.stateDir, gpu.uuid)
  const {book, movedAside} = readOrStart(file, deps.trust, gpu, deps.bootId, options.onCorrupt ?? 'throw', lock)
  // every write (each journal step, the final save) first checks that the lock is still ours: a holder paused past
  // the stale time and taken over must not write its stale copy over the new holder's
  const persist = () => {
    lock.assertHeld()
    writeBook(file, book)
  }
  const index = gpu.index ?? indexInThisBoot(book, deps.bootId)
  const probe = () => deps.gpu.probeGpu(gpu.uuid, {mig: options.read !== 'settings', migExpected: options.migExpected, index})
  let live = await probe()
  const before = Object.keys(book.sessions)
  const notes = forgetIfRebooted(book, deps.bootId)
  if (deps.bootId !== null) book.bootId = deps.bootId
  const lostToReboot = before.filter((n) => !(n in book.sessions))
  const recovery = await recoverAbandoned(
    deps,
    book,
    live,
    persist,
    (s) => isSessionPart(s) && !firstRecordActive(deps.stateDir, deps.trust, s as SessionRecord),
  )
  notes.push(...recovery.notes)
  releaseVoidClaims(deps.stateDir, deps.trust, [...lostToReboot, ...recovery.recovered], book)
  if (recovery.recovered.length > 0) live = await probe()
  if (movedAside) notes.push(`the damaged journal was moved to ${movedAside}`)
  return {
    book,
    live,
    persist,
    recovered: [...lostToReboot, ...recovery.recovered],
    notes,
    movedAside,
    contextFor: (session) => stepContext(deps.gpu, book, session, live, deps.trust),
  }
}

/**
 * The names of sessions just rolled back or lost to a reboot, freed where their claim's process is gone and no book
 * records them any more (a spread session's other records keep it; a damaged book may hold one, so it keeps them all):
 * a teammate need not run `recover` to take a name a dead `up` left behind.
 */
function releaseVoidClaims(stateDir: string, trust: StatePolicy, names: readonly string[], book: GpuBook): void {
  if (names.length === 0) return
  const recorded = recordedNames(stateDir, trust, book.gpu.uuid)
  if (recorded === null || recorded.damaged > 0) return
  const claims = readClaims(stateDir, trust)
  for (const name of names) {
    const claim = claims.find((c) => c.name === name)
    if (claim && !(name in book.sessions) && !recorded.names.has(name) && diedOnThisHost(claim)) releaseName(stateDir, name)
  }
}

/** After the caller acted: GPU-wide settings nobody holds any more put back, and the book saved. */
async function closeBook(deps: BookStoreDeps, open: OpenBook, {keepIfEmpty = true}: {readonly keepIfEmpty?: boolean} = {}): Promise<void> {
  await settleUnheldLeases({gpu: deps.gpu, book: open.book, notes: open.notes, live: open.live})
  const empty = Object.keys(open.book.sessions).length === 0 && Object.keys(open.book.leases).length === 0
  if (!keepIfEmpty && empty && !fs.existsSync(bookPath(deps.stateDir, open.book.gpu.uuid))) return
  open.persist()
}

/**
 * A change to one session's record after its steps are done (the host key `up` learns once the container answers):
 * under the GPU's lock, without reading the GPU, because nothing on it changes. A session ended meanwhile is left alone.
 */
export async function amendSession(stateDir: string, trust: StatePolicy, gpuUuid: string, name: string, change: (session: BookSession) => void): Promise<void> {
  await withGpuLock(
    stateDir,
    gpuUuid,
    async (lock) => {
      const file = bookPath(stateDir, gpuUuid)
      const book = readBook(file, trust)
      const session = book?.sessions[name]
      if (!book || !session) return
      change(session)
      lock.assertHeld()
      writeBook(file, book)
    },
    {trust},
  )
}

/**
 * Whether a spread session's part still belongs to a live session: its first record, in its first GPU's book, is
 * there with the same creation time and active. Read without that GPU's lock (books are replaced whole): whoever holds
 * this part's lock knows that no `up` of this session is under way, since an `up` holds every one of its GPUs' locks
 * until the first record is active. A first book that cannot be read keeps the part (nothing is undone on a doubt).
 */
function firstRecordActive(stateDir: string, trust: StatePolicy, part: SessionRecord): boolean {
  const {gpuUuid, createdAt} = part.partOf!
  let first: BookSession | undefined
  try {
    first = readBook(bookPath(stateDir, gpuUuid), trust)?.sessions[part.name]
  } catch {
    return true
  }
  // stopping: a down under way (or killed, which the first book's next opener finishes) still holds them
  return first !== undefined && first.phase !== 'starting' && first.createdAt === createdAt
}

/**
 * `-q -i` does not print the GPU's index. An `up` session's plan records the index it ran at, which holds until
 * the next reboot (after which the book's sessions are void anyway). Kept out of the book's own fields, so that
 * an older gpu-cosplay sharing the state directory still reads the book.
 */
function indexInThisBoot(book: GpuBook, bootId: string | null): number | undefined {
  if (bootId === null || book.bootId !== bootId) return undefined
  for (const session of Object.values(book.sessions)) {
    if (!isLeaseSession(session) && session.plan.host.index !== null) return session.plan.host.index
  }
  return undefined
}

function readOrStart(
  file: string,
  trust: StatePolicy,
  gpu: {uuid: string; name: string},
  bootId: string | null,
  onCorrupt: 'throw' | 'move-aside',
  lock: HeldLock,
): {book: GpuBook; movedAside: string | null} {
  try {
    return {book: readBook(file, trust) ?? emptyBook(gpu, bootId), movedAside: null}
  } catch (error) {
    // a symlink or an untrusted file in the book's place is moved aside too (rename moves the link, not its target)
    if (onCorrupt === 'throw' || !isCosplayError(error) || (error.code !== 'JOURNAL_CORRUPT' && !isUnsafeFileError(error))) throw error
    const movedAside = `${file}.corrupt-${process.pid}`
    lock.assertHeld()
    fs.renameSync(file, movedAside)
    return {book: emptyBook(gpu, bootId), movedAside}
  }
}
