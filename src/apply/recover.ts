import {type BookStoreDeps, listBooks, withBook} from './book-store.js'
import {isSessionPart} from './gpu-book.js'
import {readClaims, releaseName} from './session-names.js'
import {diedOnThisHost} from '../core/recorded-process.js'
import type {StatePolicy} from '../core/state-policy.js'

export type RecoverResult = {
  readonly gpus: readonly {readonly uuid: string; readonly name: string; readonly recovered: readonly string[]}[]
  readonly releasedNames: readonly string[]
  readonly notes: readonly string[]
}

/** For every GPU the tool has touched: roll back or finish the sessions of processes that died mid-way. */
export async function recoverAll(deps: BookStoreDeps): Promise<RecoverResult> {
  const gpus: {uuid: string; name: string; recovered: string[]}[] = []
  const notes: string[] = []
  // Opening the book under its lock is the recovery: withBook rolls back what dead processes left.
  const recoverBook = async (gpu: {uuid: string; name: string}) => {
    let bookNotes: readonly string[] = []
    const recovered = await withBook(deps, gpu, async (open) => {
      bookNotes = open.notes
      return [...open.recovered]
    })
    notes.push(...bookNotes)
    return recovered
  }
  for (const {book: seen} of listBooks(deps.stateDir, deps.trust)) {
    gpus.push({uuid: seen.gpu.uuid, name: seen.gpu.name, recovered: await recoverBook(seen.gpu)})
  }
  // A spread session's part is void once its first record is gone; a down killed while ending that first record is
  // finished above, maybe after the part's book was opened: those books are opened once more.
  for (const {book: seen} of listBooks(deps.stateDir, deps.trust).filter(({book}) => Object.values(book.sessions).some(isSessionPart))) {
    const entry = gpus.find((g) => g.uuid === seen.gpu.uuid)
    const recovered = await recoverBook(seen.gpu)
    if (entry) entry.recovered.push(...recovered)
    else gpus.push({uuid: seen.gpu.uuid, name: seen.gpu.name, recovered})
  }
  return {gpus, releasedNames: releaseDeadClaims(deps.stateDir, deps.trust), notes}
}

/** Name claims whose session never reached a book and whose process is gone. */
function releaseDeadClaims(stateDir: string, trust: StatePolicy): string[] {
  const live = new Set(listBooks(stateDir, trust).flatMap(({book}) => Object.keys(book.sessions)))
  const released: string[] = []
  for (const claim of readClaims(stateDir, trust)) {
    if (live.has(claim.name) || !diedOnThisHost(claim)) continue
    releaseName(stateDir, claim.name)
    released.push(claim.name)
  }
  return released
}
