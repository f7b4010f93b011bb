import {type BookStoreDeps, listBooks, withBook} from './book-store.js'
import {readClaims, releaseName} from './session-names.js'
import {diedOnThisHost} from '../core/recorded-process.js'

export type RecoverResult = {
  readonly gpus: readonly {readonly uuid: string; readonly name: string; readonly recovered: readonly string[]}[]
  readonly releasedNames: readonly string[]
  readonly notes: readonly string[]
}

/** For every GPU the tool has touched: roll back or finish the sessions of processes that died mid-way. */
export async function recoverAll(deps: BookStoreDeps): Promise<RecoverResult> {
  const gpus: {uuid: string; name: string; recovered: string[]}[] = []
  const notes: string[] = []
  for (const {book: seen} of listBooks(deps.stateDir)) {
    // Opening the book under its lock is the recovery: withBook rolls back what dead processes left.
    let bookNotes: readonly string[] = []
    const recovered = await withBook(deps, seen.gpu, async (open) => {
      bookNotes = open.notes
      return [...open.recovered]
    })
    notes.push(...bookNotes)
    gpus.push({uuid: seen.gpu.uuid, name: seen.gpu.name, recovered})
  }
  return {gpus, releasedNames: releaseDeadClaims(deps.stateDir), notes}
}

/** Name claims whose session never reached a book and whose process is gone. */
function releaseDeadClaims(stateDir: string): string[] {
  const live = new Set(listBooks(stateDir).flatMap(({book}) => Object.keys(book.sessions)))
  const released: string[] = []
  for (const claim of readClaims(stateDir)) {
    if (live.has(claim.name) || !diedOnThisHost(claim)) continue
    releaseName(stateDir, claim.name)
    released.push(claim.name)
  }
  return released
}
