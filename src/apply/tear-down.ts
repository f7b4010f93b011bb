import fs from 'node:fs'
import path from 'node:path'

import {InputError, StateError} from '../core/errors.js'
import type {GpuControl} from '../host/gpu-control.js'
import type {HostGpu} from '../host/types.js'
import {recoverAbandoned, stepContext, unwindSession} from './engine.js'
import {bookPath, type GpuBook, readBook, type SessionRecord, writeBook} from './gpu-book.js'
import {withGpuLock} from './gpu-lock.js'
import {forgetIfRebooted} from './reboot.js'
import {releaseName} from './session-names.js'
import {settleUnheldLeases} from './steps/lease-steps.js'

export type Requester = {readonly uid: number; readonly isRoot: boolean; readonly bootId: string | null}

export type ClosedSession = {
  readonly name: string
  readonly gpuUuid: string
  readonly target: string
  /** GPU-wide settings this session was the last to hold, now put back */
  readonly restored: readonly string[]
  readonly notes: readonly string[]
}

export type SessionLocation = {readonly session: SessionRecord; readonly gpuUuid: string; readonly gpuName: string}

/** Every session in every GPU book. Reads need no lock: books are replaced atomically. */
export function listSessions(stateDir: string): SessionLocation[] {
  return listBooks(stateDir).flatMap(({book}) =>
    Object.values(book.sessions).map((session) => ({session, gpuUuid: book.gpu.uuid, gpuName: book.gpu.name})),
  )
}

export function listBooks(stateDir: string): {file: string; book: GpuBook}[] {
  const dir = path.join(stateDir, 'gpus')
  if (!fs.existsSync(dir)) return []
  return fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.json') && !f.startsWith('.'))
    .sort()
    .map((f) => path.join(dir, f))
    .map((file) => ({file, book: readBook(file)!}))
}

/**
 * Ends sessions: container first, then the compute and GPU instance by their IDs, then the GPU-wide
 * leases (the last holder restores the recorded values). Names are all checked before anything changes.
 */
export async function tearDown(names: readonly string[], requester: Requester, deps: {gpu: GpuControl; stateDir: string}): Promise<ClosedSession[]> {
  const all = listSessions(deps.stateDir)
  const chosen = names.map((name) => {
    const found = all.find((l) => l.session.name === name)
    if (!found) {
      throw new InputError('UNKNOWN_SESSION', `no session named "${name}"`, {fix: ['see them: gpu-cosplay ps']})
    }
    if (found.session.owner.uid !== requester.uid && !requester.isRoot) {
      throw new StateError('NOT_OWNER', `session "${name}" belongs to ${found.session.owner.user} (uid ${found.session.owner.uid})`, {
        exit: 4,
        fix: ['ask them to end it, or run as root'],
      })
    }
    return found
  })

  const closed: ClosedSession[] = []
  for (const {session, gpuUuid} of chosen) {
    closed.push(await withGpuLock(deps.stateDir, gpuUuid, () => tearDownLocked(session.name, gpuUuid, requester, deps)))
    releaseName(deps.stateDir, session.name)
  }
  return closed
}

async function tearDownLocked(name: string, gpuUuid: string, requester: Requester, deps: {gpu: GpuControl; stateDir: string}): Promise<ClosedSession> {
  const file = bookPath(deps.stateDir, gpuUuid)
  const book = readBook(file)
  const persist = () => writeBook(file, book!)
  const session = book?.sessions[name]
  if (!book || !session) throw new InputError('UNKNOWN_SESSION', `no session named "${name}" (ended meanwhile?)`, {fix: ['see them: gpu-cosplay ps']})
  const live = await liveGpu(deps.gpu, gpuUuid)
  const notes = forgetIfRebooted(book, requester.bootId)
  if (!book.sessions[name]) {
    persist()
    return {name, gpuUuid, target: session.target.key, restored: [], notes}
  }
  // A dead process's half-done work on this GPU goes first; this session is active, so it is left alone.
  const recovery = await recoverAbandoned(deps.gpu, book, live, persist)
  notes.push(...recovery.notes)

  session.phase = 'stopping'
  persist()
  const heldBefore = Object.entries(book.leases).filter(([, l]) => l?.holders.includes(name)).map(([k]) => k)
  const ctx = stepContext(deps.gpu, book, session, live)
  await unwindSession(ctx, persist)
  await settleUnheldLeases(ctx)
  delete book.sessions[name]
  persist()
  const restored = heldBefore.filter((k) => !(k in book.leases))
  return {name, gpuUuid, target: session.target.key, restored, notes: [...notes, ...ctx.notes]}
}

export async function liveGpu(gpu: GpuControl, uuid: string): Promise<HostGpu> {
  const found = (await gpu.probe()).gpus.find((g) => g.uuid === uuid)
  if (!found) throw new StateError('GPU_GONE', `GPU ${uuid} is no longer listed by nvidia-smi`)
  return found
}
