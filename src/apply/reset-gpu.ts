import {pickGpu} from '../host/pick-gpu.js'
import {type BookStoreDeps, listSessions, withBook} from './book-store.js'
import {unwindSession} from './journal.js'
import {releaseName} from './session-names.js'

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
export async function resetGpu(gpuIndex: number, deps: BookStoreDeps): Promise<ResetResult> {
  const gpu = pickGpu(await deps.gpu.listGpus(), gpuIndex)
  return withBook(
    deps,
    gpu,
    async (open) => {
      const {book, persist, notes} = open
      const result = {gpuIndex: open.live.index, gpuUuid: gpu.uuid, movedAside: open.movedAside, notes}
      const ended = [...open.recovered]
      if (Object.keys(book.sessions).length > 0 || Object.keys(book.leases).length > 0 || ended.length > 0) {
        for (const session of Object.values(book.sessions)) {
          const ctx = open.contextFor(session)
          try {
            await unwindSession(ctx, persist, deps.steps, {keepGoing: true})
          } catch (error) {
            notes.push(`${session.name}: ${(error as Error).message}`)
          }
          // Whatever could not be undone, the session is over; its leases must not outlive it.
          for (const lease of Object.values(book.leases)) if (lease) lease.holders = lease.holders.filter((h) => h !== session.name)
          delete book.sessions[session.name]
          // a spread session's other records keep its name until they end
          if (!listSessions(deps.stateDir, deps.trust).some((l) => l.gpuUuid !== book.gpu.uuid && l.session.name === session.name))
            releaseName(deps.stateDir, session.name)
          ended.push(session.name)
          notes.push(...ctx.notes)
        }
        return {...result, mode: 'journal' as const, endedSessions: ended}
      }

      const live = open.live
      await deps.gpu.resetClocks(live.index)
      if (live.power.defaultW !== null) await deps.gpu.setPowerLimit(live.index, live.power.defaultW)
      if (live.gpuInstances.length > 0) {
        const ids = live.gpuInstances.map((gi) => gi.id).join(', ')
        notes.push(
          `GPU instances ${ids} are on GPU ${live.index} and no record says whose; none was destroyed (an administrator can: nvidia-smi mig -i ${live.index} -gi ID -dgi after -dci)`,
        )
      }
      notes.push('MIG mode and persistence mode were left as they are: without a record, their earlier values are unknown')
      return {...result, mode: 'driver-defaults' as const, endedSessions: []}
    },
    {onCorrupt: 'move-aside'},
  )
}
