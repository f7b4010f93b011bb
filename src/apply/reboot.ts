import type {GpuBook} from './gpu-book.js'

/**
 * A reboot destroys every MIG instance and resets clocks, power limit and persistence to the driver's
 * values; only MIG mode survives. After one, the journal's instance IDs name nothing of ours (they may
 * already name someone else's new instances), so nothing is undone: the records are dropped. The MIG
 * lease stays, so that the last session to leave still turns MIG off when we turned it on.
 */
export function forgetIfRebooted(book: GpuBook, bootId: string | null): string[] {
  if (book.bootId === null || bootId === null || book.bootId === bootId) return []
  const lost = Object.keys(book.sessions)
  const notes = lost.length > 0 ? [`the host rebooted since ${lost.join(', ')} started: their GPU instances are gone and their records were dropped`] : []
  book.sessions = {}
  const mig = book.leases['mig-mode']
  book.leases = mig ? {'mig-mode': {...mig, holders: []}} : {}
  book.bootId = bootId
  return notes
}
