import fs from 'node:fs'

import {isCosplayError} from '../core/errors.js'
import type {GpuControl} from '../host/gpu-control.js'
import {pickGpu} from '../host/pick-gpu.js'
import {stepContext, unwindSession} from './engine.js'
import {bookPath, type GpuBook, readBook, writeBook} from './gpu-book.js'
import {withGpuLock} from './gpu-lock.js'
import {releaseName} from './session-names.js'
import {settleUnheldLeases} from './steps/lease-steps.js'
import {liveGpu} from './tear-down.js'

export type ResetResult = {
  gpuIndex: number
  gpuUuid: string
  /** 'journal': undone from the records; 'driver-defaults': no usable record, clocks and power reset to defaults */
  mode: 'journal' | 'driver-defaults'
  endedSessions: string[]
  /** a damaged journal moved aside, so the next command starts clean */
  movedAside: string | null
  notes: string[]
}

/**
 * For the day state is lost or wrong: undo every session on one GPU from its journal and restore the
 * recorded originals; without a usable journal, reset clocks and power to the driver's defaults. Even then,
 * no instance is destroyed that no record proves is ours: those are listed for an administrator.
 */
export async function resetGpu(gpuIndex: number, deps: {gpu: GpuControl; stateDir: string}): Promise<ResetResult> {
  const first = pickGpu(await deps.gpu.probe(), gpuIndex)
  return withGpuLock(deps.stateDir, first.uuid, async () => {
    const file = bookPath(deps.stateDir, first.uuid)
    const notes: string[] = []
    let movedAside: string | null = null
    let book: GpuBook | null = null
    try {
      book = readBook(file)
    } catch (error) {
      if (!isCosplayError(error) || error.code !== 'JOURNAL_CORRUPT') throw error
      movedAside = `${file}.corrupt-${process.pid}`
      fs.renameSync(file, movedAside)
      notes.push(`the damaged journal was moved to ${movedAside}`)
    }
    let live = await liveGpu(deps.gpu, first.uuid)
    if (book && (Object.keys(book.sessions).length > 0 || Object.keys(book.leases).length > 0)) {
      const persist = () => writeBook(file, book!)
      const ended: string[] = []
      for (const session of Object.values(book.sessions)) {
        const ctx = stepContext(deps.gpu, book, session, live)
        try {
          await unwindSession(ctx, persist)
        } catch (error) {
          notes.push(`${session.name}: ${(error as Error).message}`)
        }
        // Whatever could not be undone, the session is over; its leases must not outlive it.
        for (const lease of Object.values(book.leases)) if (lease) lease.holders = lease.holders.filter((h) => h !== session.name)
        delete book.sessions[session.name]
        releaseName(deps.stateDir, session.name)
        ended.push(session.name)
        notes.push(...ctx.notes)
        live = ctx.live
      }
      const settle = {gpu: deps.gpu, book, notes, refresh: () => liveGpu(deps.gpu, first.uuid)}
      await settleUnheldLeases(settle)
      persist()
      return {gpuIndex: live.index, gpuUuid: first.uuid, mode: 'journal', endedSessions: ended, movedAside, notes}
    }

    await deps.gpu.resetClocks(live.index)
    if (live.power.defaultW !== null) await deps.gpu.setPowerLimit(live.index, live.power.defaultW)
    if (live.gpuInstances.length > 0) {
      const ids = live.gpuInstances.map((gi) => gi.id).join(', ')
      notes.push(`GPU instances ${ids} are on GPU ${live.index} and no record says whose; none was destroyed (an administrator can: nvidia-smi mig -i ${live.index} -gi ID -dgi after -dci)`)
    }
    notes.push('MIG mode and persistence mode were left as they are: without a record, their earlier values are unknown')
    return {gpuIndex: live.index, gpuUuid: first.uuid, mode: 'driver-defaults', endedSessions: [], movedAside, notes}
  })
}
