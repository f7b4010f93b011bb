import fs from 'node:fs'

import type {Executor} from '../core/executor.js'

/**
 * Removing a folder a member owns (their MPS pipes and logs), from a process that may be root. fs.rmSync walks by
 * path: as root, a link the member swaps in for a folder between its lstat and its readdir leads the walk into
 * anything root may delete. So a member's tree is removed with the member's own rights (`setpriv ... rm -rf`), where
 * a swapped link leads only to what they may remove anyway, and root then removes the emptied folder itself (rmdir:
 * never follows a link, never removes a folder with anything in it), since the folder above it is root's in the
 * engine. A tree of this process's own user is removed as it always was: nobody else can change it.
 */

/** A member's tree is small (pipes, a few logs); one grown to stall root under the GPU lock is left, with a note. */
export const REMOVE_AS_OWNER_TIMEOUT_MS = 30_000

/** Removes `dir` and what is in it; tolerates it being gone. Returns what could not be removed, for the user's notes. */
export async function removeTreeAsOwner(dir: string, executor: Executor): Promise<string | null> {
  let info: fs.Stats
  try {
    info = fs.lstatSync(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw error
  }
  const me = process.getuid?.()
  if (me !== 0 || info.uid === me) {
    fs.rmSync(dir, {recursive: true, force: true})
    return null
  }
  const argv = ['setpriv', `--reuid=${info.uid}`, `--regid=${info.gid}`, '--clear-groups', '--', 'rm', '-rf', '--', dir]
  const ran = await executor.run(argv, {timeoutMs: REMOVE_AS_OWNER_TIMEOUT_MS})
  try {
    fs.rmdirSync(dir)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT') return null
    // something in it its owner may not remove (or put back meanwhile): theirs to clear, nothing of root's was touched
    if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR') {
      const why = ran.timedOut ? `not done within ${REMOVE_AS_OWNER_TIMEOUT_MS / 1000} s` : (ran.stderr.trim().split('\n')[0] ?? '')
      return `left ${dir}: it could not all be removed as its owner (uid ${info.uid})${why ? `: ${why}` : ''}`
    }
    throw error
  }
  return null
}
