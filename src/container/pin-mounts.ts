/**
 * Mount sources pinned to what the check saw. The engine, as root, walks each path from / without following links:
 * every component is opened with O_PATH|O_NOFOLLOW relative to the folder opened before it (through
 * /proc/self/fd/N/<name>) and checked on its descriptor (fstat): a link or a `..` anywhere is refused, the caller (uid,
 * gid, supplementary groups) must be able to search every folder on the way and read the source (and search it, a
 * folder; write it, for a read-write mount). The descriptors stay open until the 'stage-mounts' step binds exactly
 * them (stage-mounts-step.ts), also after a `--wait` in the queue: a path swapped for a link after the check changes
 * nothing that is mounted.
 *
 * Mode bits decide, as the kernel's own check does without ACLs: a POSIX ACL that grants more is not honoured (the
 * mount is refused), one that denies what the mode bits allow is not seen.
 */
import fs from 'node:fs'

import {InputError, StateError} from '../core/errors.js'
import type {Executor} from '../core/executor.js'
import {loginGroupIds} from '../core/user-groups.js'

/** open(2)'s O_PATH on Linux (x86_64 and aarch64 alike); Node's fs.constants does not name it. */
export const O_PATH = 0o10000000

/** Whose rights decide. Root as the caller is not checked (its own `up` binds by path anyway). */
export type MountCaller = {
  readonly uid: number
  readonly gid: number
  readonly user: string
  /** supplementary groups; absent: looked up (`id -G`, through the name service) */
  readonly groups?: readonly number[]
}

/** What a source must allow the caller: a read-write folder (the workspace), or a folder or file to mount rw or ro. */
export type MountWant = 'workspace' | 'rw' | 'ro'

/** A source as the walk opened it: the descriptor (O_PATH) is what gets bound, never the path. */
export type PinnedSource = {
  /** the path as asked, for messages and the record */
  readonly path: string
  readonly fd: number
  readonly dev: number
  readonly ino: number
  readonly kind: 'dir' | 'file'
}

export type PinnedVolume = {readonly source: PinnedSource; readonly target: string; readonly readOnly: boolean}

/** The workspace and volume sources of one `up`, open; close() lets them go (the engine's process ending does too). */
export type PinnedMounts = {
  readonly workspace: PinnedSource
  readonly volumes: readonly PinnedVolume[]
  close(): void
}

export type MountRequest = {
  /** absolute, as the caller's own process resolved it */
  readonly workspace: string
  readonly volumes: readonly {readonly source: string; readonly target: string; readonly readOnly: boolean}[]
}

/** For tests: called before each component is opened, with the path up to and including it; a swap there must not win. */
export type WalkHooks = {readonly beforeComponent?: (pathSoFar: string, index: number) => void}

/**
 * The entry point: every source of `request` pinned for `caller`, or MOUNT_NOT_ALLOWED (exit 4) for the first that
 * may not be mounted (BAD_VOLUME for a named Docker volume). Nothing stays open when it throws.
 */
export async function pinMounts(
  request: MountRequest,
  caller: MountCaller,
  options: {readonly executor: Executor; readonly hooks?: WalkHooks},
): Promise<PinnedMounts> {
  for (const v of request.volumes) {
    if (!v.source.startsWith('/')) {
      throw new StateError('BAD_VOLUME', `--volume ${v.source}:${v.target}: a named Docker volume is shared by everyone on this box; mount a folder of yours`, {
        exit: 4,
      })
    }
  }
  const who = caller.uid === 0 ? null : {...caller, groups: caller.groups ?? (await supplementaryGroups(caller, options.executor))}
  const opened: PinnedSource[] = []
  try {
    const workspace = pinMountSource(request.workspace, who, 'workspace', options.hooks)
    opened.push(workspace)
    const volumes = request.volumes.map((v) => {
      const source = pinMountSource(v.source, who, v.readOnly ? 'ro' : 'rw', options.hooks)
      opened.push(source)
      return {source, target: v.target, readOnly: v.readOnly}
    })
    return {workspace, volumes, close: () => closeAll(opened)}
  } catch (error) {
    closeAll(opened)
    throw error
  }
}

/** The walk for one source; `caller` null: root, nothing checked but links and `..`. */
export function pinMountSource(
  asked: string,
  caller: (MountCaller & {readonly groups: readonly number[]}) | null,
  want: MountWant,
  hooks: WalkHooks = {},
): PinnedSource {
  const flag = want === 'workspace' ? '--workspace' : '--volume'
  if (!asked.startsWith('/') || /[\0\n]/.test(asked)) throw new InputError('BAD_PATH', `${flag} ${asked}: not an absolute path of one line`)
  const names = asked.split('/').filter((name) => name !== '')
  if (names.some((name) => name === '.' || name === '..')) throw refused(flag, asked, 'names "." or ".." (give the path itself)')
  const {O_DIRECTORY, O_NOFOLLOW} = fs.constants
  let fd = fs.openSync('/', O_PATH | O_DIRECTORY)
  try {
    let info = fs.fstatSync(fd)
    let sofar = ''
    for (const [index, name] of names.entries()) {
      // the folder we are in must let the caller through, before anything in it is even looked at
      if (!may(info, caller, SEARCH)) throw refused(flag, asked, 'does not exist (or you cannot reach it)')
      sofar += `/${name}`
      hooks.beforeComponent?.(sofar, index)
      let next: number
      try {
        next = fs.openSync(`/proc/self/fd/${fd}/${name}`, O_PATH | O_NOFOLLOW)
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code
        if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'EACCES') throw refused(flag, asked, 'does not exist (or you cannot reach it)')
        throw error
      }
      fs.closeSync(fd)
      fd = next
      info = fs.fstatSync(fd)
      if (info.isSymbolicLink()) throw refused(flag, asked, `has a link at ${sofar} (give the path it leads to)`)
      if (index < names.length - 1 && !info.isDirectory()) throw refused(flag, asked, 'does not exist (or you cannot reach it)')
    }
    const kind = info.isDirectory() ? 'dir' : info.isFile() ? 'file' : null
    if (kind === null) throw refused(flag, asked, 'is neither a folder nor a regular file')
    if (want === 'workspace' && kind !== 'dir') throw refused(flag, asked, 'is not a folder')
    if (!may(info, caller, kind === 'dir' ? READ | SEARCH : READ)) throw refused(flag, asked, 'is not readable by you')
    if (want !== 'ro' && !may(info, caller, WRITE)) throw refused(flag, asked, 'is not writable by you (mount it read-only with :ro)')
    const pinned = {path: asked, fd, dev: info.dev, ino: info.ino, kind} as const
    return pinned
  } catch (error) {
    fs.closeSync(fd)
    throw error
  }
}

const READ = 4
const WRITE = 2
const SEARCH = 1

/** The kernel's mode-bit check: the owner's bits for the owner, else the group's for a member, else the others'. */
function may(info: fs.Stats, caller: {readonly uid: number; readonly gid: number; readonly groups: readonly number[]} | null, bits: number): boolean {
  if (caller === null) return true
  const mode = info.mode
  if (info.uid === caller.uid) return ((mode >> 6) & bits) === bits
  if (info.gid === caller.gid || caller.groups.includes(info.gid)) return ((mode >> 3) & bits) === bits
  return (mode & bits) === bits
}

function refused(flag: string, asked: string, why: string): StateError {
  return new StateError('MOUNT_NOT_ALLOWED', `${flag}: ${asked} ${why}`, {
    exit: 4,
    fix: ['mount only what you may read (and write, for a read-write mount), by a path without links'],
  })
}

/** The caller's groups as the name service gives them (what setpriv --init-groups and a login would set). */
async function supplementaryGroups(caller: MountCaller, executor: Executor): Promise<number[]> {
  const read = await loginGroupIds(caller.user, executor)
  if (!read.ok) throw new StateError('MOUNT_CHECK_FAILED', `cannot read the groups of ${caller.user}: ${read.why}`, {exit: 4})
  return read.gids
}

function closeAll(sources: readonly PinnedSource[]): void {
  for (const s of sources) {
    try {
      fs.closeSync(s.fd)
    } catch {
      // closed already
    }
  }
}
