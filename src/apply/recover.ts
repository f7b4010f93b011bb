import os from 'node:os'

import type {GpuControl} from '../host/gpu-control.js'
import {recoverAbandoned} from './engine.js'
import {bookPath, readBook, writeBook} from './gpu-book.js'
import {withGpuLock} from './gpu-lock.js'
import {forgetIfRebooted} from './reboot.js'
import {readClaims, releaseName} from './session-names.js'
import {settleUnheldLeases} from './steps/lease-steps.js'
import {listBooks, liveGpu} from './tear-down.js'

export type RecoverResult = {
  readonly gpus: readonly {readonly uuid: string; readonly name: string; readonly recovered: readonly string[]}[]
  readonly releasedNames: readonly string[]
  readonly notes: readonly string[]
}

/** For every GPU the tool has touched: roll back or finish the sessions of processes that died mid-way. */
export async function recoverAll(deps: {gpu: GpuControl; stateDir: string; bootId: string | null}): Promise<RecoverResult> {
  const gpus: {uuid: string; name: string; recovered: string[]}[] = []
  const notes: string[] = []
  for (const {book: seen} of listBooks(deps.stateDir)) {
    const uuid = seen.gpu.uuid
    await withGpuLock(deps.stateDir, uuid, async () => {
      const file = bookPath(deps.stateDir, uuid)
      const book = readBook(file)!
      const persist = () => writeBook(file, book)
      const live = await liveGpu(deps.gpu, uuid)
      const before = Object.keys(book.sessions)
      notes.push(...forgetIfRebooted(book, deps.bootId))
      const lostToReboot = before.filter((n) => !(n in book.sessions))
      const result = await recoverAbandoned(deps.gpu, book, live, persist)
      const ctx = {gpu: deps.gpu, book, notes: [] as string[], refresh: () => liveGpu(deps.gpu, uuid)}
      await settleUnheldLeases(ctx)
      persist()
      gpus.push({uuid, name: book.gpu.name, recovered: [...lostToReboot, ...result.recovered]})
      notes.push(...result.notes, ...ctx.notes)
    })
  }
  return {gpus, releasedNames: releaseDeadClaims(deps.stateDir), notes}
}

/** Name claims whose session never reached a book and whose process is gone. */
function releaseDeadClaims(stateDir: string): string[] {
  const live = new Set(listBooks(stateDir).flatMap(({book}) => Object.keys(book.sessions)))
  const released: string[] = []
  for (const claim of readClaims(stateDir)) {
    if (live.has(claim.name) || claim.hostname !== os.hostname() || isAlive(claim.pid)) continue
    releaseName(stateDir, claim.name)
    released.push(claim.name)
  }
  return released
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
