/**
 * The journal step that binds the pinned mount sources (pin-mounts.ts) at root-owned staging paths, which the container
 * then binds instead of the member's paths: `<state>/mounts/<session>/<entry>`, under a folder only root may enter.
 * Each entry is a bind of the descriptor the walk opened (`mount --bind /proc/self/fd/3`, the descriptor as the child's
 * fd 3), read-only where asked, nosuid and nodev always. Runs before 'start-container', so that it is undone after the
 * container is gone.
 *
 * The journal holds the staging folder and its entries (never a descriptor): undo unmounts each and removes it, and
 * tolerates what is already gone, so `recover` after a kill -9 at any point leaves nothing mounted or staged.
 */
import fs from 'node:fs'
import path from 'node:path'

import createDebug from 'debug'

import type {JournalEntry} from '../apply/gpu-book.js'
import type {Json, StepContext, StepImpl} from '../apply/steps/step.js'
import {StateError} from '../core/errors.js'
import type {Executor} from '../core/executor.js'
import {DEBUG_NS} from '../core/names.js'
import {ensureDirMode} from '../core/settle-dir.js'
import {bindDescriptor, isMountPoint, unmountAll} from './bind-mount.js'

const debug = createDebug(DEBUG_NS.container)

/** One staged source: `name` under the staging folder; what the walk saw of it, for the check after the bind. */
export type StagedEntry = {
  readonly name: string
  /** the caller's path, for messages only */
  readonly source: string
  readonly kind: 'dir' | 'file'
  readonly readOnly: boolean
  readonly dev: number
  readonly ino: number
}

export type StageMountsParams = {
  /** `<state>/mounts/<session>` */
  readonly dir: string
  readonly entries: readonly StagedEntry[]
}

/** Only in the live run (never journaled): the open descriptors, by entry name. */
export type StageMountsLive = StageMountsParams & {readonly fds: Readonly<Record<string, number>>}

/** The path the container binds for an entry. */
export function stagedPath(params: StageMountsParams, name: string): string {
  return path.join(params.dir, name)
}

const ROOT = {uid: 0, gid: 0}
/** A journal is no licence to unmount or remove anything else: undo acts only on paths of this shape. */
const STAGING_DIR = /\/mounts\/[A-Za-z0-9][A-Za-z0-9_.-]*$/
const ENTRY = /^(workspace|volume-\d+)$/

export function stageMountsStep(executor: () => Executor): StepImpl {
  return {
    kind: 'stage-mounts',

    describe(params: Json): string {
      const {dir, entries} = params as StageMountsParams
      return `stage ${entries.map((e) => e.source).join(', ')} under ${dir}`
    },

    async readPrior(_ctx: StepContext, params: Json): Promise<Json | null> {
      return (params as StageMountsParams).entries.length === 0 ? null : {}
    },

    async apply(_ctx: StepContext, params: Json): Promise<Json> {
      const live = params as StageMountsLive
      if (live.fds === undefined) throw new StateError('STAGE_WITHOUT_SOURCES', 'the staging step runs only in the up that opened the sources')
      ensureDirMode(path.dirname(live.dir), 0o700, ROOT)
      ensureDirMode(live.dir, 0o700, ROOT)
      const staged: string[] = []
      try {
        for (const entry of live.entries) {
          const target = stagedPath(live, entry.name)
          // one left mounted by a crash is taken down first: nothing here ever changes what is mounted (a member's folder)
          await unmountAll(executor(), target)
          makeMountPoint(target, entry.kind)
          await bindDescriptor(executor(), live.fds[entry.name], target, {readOnly: entry.readOnly})
          staged.push(entry.name)
          // what is bound is what was checked (the descriptor's own inode, so this holds unless the kernel disagrees)
          const seen = fs.statSync(target)
          if (seen.dev !== entry.dev || seen.ino !== entry.ino) {
            throw new StateError('MOUNT_CHANGED', `${entry.source}: what was bound is not what was checked`, {exit: 4})
          }
        }
      } catch (error) {
        await removeStaged(executor(), live, live.entries).catch((undoError: unknown) => debug('stage-mounts: cleanup failed: %O', undoError))
        throw error
      }
      return {staged}
    },

    async undo(_ctx: StepContext, entry: JournalEntry): Promise<void> {
      const params = entry.params as StageMountsParams
      if (!STAGING_DIR.test(params.dir) || !params.entries.every((e) => ENTRY.test(e.name))) {
        throw new StateError('BAD_JOURNAL', `stage-mounts: ${params.dir} is not a staging folder; left alone`, {fix: ['look at it, then remove it by hand']})
      }
      await removeStaged(executor(), params, params.entries)
    },
  }
}

/** A folder or an empty file to bind onto, made in root's private folder; one left by a crash (unmounted) is reused. */
function makeMountPoint(target: string, kind: 'dir' | 'file'): void {
  if (kind === 'dir') {
    try {
      fs.mkdirSync(target, {mode: 0o700})
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !fs.lstatSync(target).isDirectory()) throw error
    }
    return
  }
  const {O_WRONLY, O_CREAT, O_NOFOLLOW} = fs.constants
  fs.closeSync(fs.openSync(target, O_WRONLY | O_CREAT | O_NOFOLLOW, 0o600))
}

/** Unmounts and removes each entry, then the folder; what is gone already is fine, and nothing is removed while mounted. */
async function removeStaged(executor: Executor, params: StageMountsParams, entries: readonly StagedEntry[]): Promise<void> {
  for (const e of entries) {
    const target = stagedPath(params, e.name)
    await unmountAll(executor, target)
    // never recursive: a mount point that is still a mount (or holds anything) fails here instead of losing files
    if (isMountPoint(target)) continue
    try {
      const info = fs.lstatSync(target)
      if (info.isDirectory()) fs.rmdirSync(target)
      else fs.unlinkSync(target)
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    }
  }
  try {
    fs.rmdirSync(params.dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  debug('stage-mounts: %s removed', params.dir)
}
