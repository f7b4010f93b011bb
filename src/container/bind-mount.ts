/**
 * The one funnel for mount(8) and umount(8): the staging binds of pinned mount sources (stage-mounts-step.ts). Every
 * call goes through the executor; a failure is a typed error with the argv and the first line of stderr.
 *
 * util-linux `--no-canonicalize`: neither path is resolved by mount itself (the source is /proc/self/fd/3, the
 * descriptor the walk opened, which the kernel binds exactly; the target is a root-only staging path).
 */
import fs from 'node:fs'

import {StateError} from '../core/errors.js'
import type {Executor} from '../core/executor.js'

const MOUNT_TIMEOUT_MS = 30_000

/** Binds the folder or file open on `fd` (any descriptor, O_PATH included) at `target`; read-only when asked. */
export async function bindDescriptor(executor: Executor, fd: number, target: string, options: {readonly readOnly: boolean}): Promise<void> {
  await mount(executor, ['mount', '--no-canonicalize', '--bind', '/proc/self/fd/3', target], fd)
  // a bind takes its flags in a second call, which sets them all: nosuid and nodev whatever was asked (nothing in a
  // member's folder is made special by being mounted), and what the source's own mount restricts (read-only, noexec)
  // carried over by name rather than left to mount(8)'s version to keep
  const inherited = sourceRestrictions(mountOptionsOf(target))
  const flags = ['remount', 'bind', 'nosuid', 'nodev', ...new Set([...(options.readOnly ? ['ro'] : []), ...inherited])].join(',')
  try {
    await mount(executor, ['mount', '--no-canonicalize', '-o', flags, target])
  } catch (error) {
    await unmountAll(executor, target).catch(() => undefined)
    throw error
  }
}

/** Unmounts whatever is mounted at `target` (nothing mounted there is fine). */
export async function unmountAll(executor: Executor, target: string): Promise<void> {
  // binds can stack (a step applied twice by a crash at the wrong moment): each call takes one off
  for (let i = 0; i < 8 && isMountPoint(target); i++) await mount(executor, ['umount', '--no-canonicalize', target])
  if (isMountPoint(target)) throw new StateError('UNMOUNT_FAILED', `${target} is still mounted after umount`, {fix: [`umount ${target}`]})
}

/** Whether something is mounted at exactly this path, as this process's /proc/self/mountinfo says. */
export function isMountPoint(target: string): boolean {
  return mountPoints().includes(target)
}

/** The mount points of this process's namespace, the kernel's octal escapes (\040 for a space, ...) undone. */
export function mountPoints(mountinfo: string = readMountinfo()): string[] {
  return mountEntries(mountinfo).map((e) => e.point)
}

/** The per-mount options (ro, noexec, nosuid...) of the topmost mount at `target`; empty when nothing is mounted there. */
export function mountOptionsOf(target: string, mountinfo: string = readMountinfo()): string[] {
  // binds stack: the last entry at a mount point is the one on top
  return (
    mountEntries(mountinfo)
      .filter((e) => e.point === target)
      .pop()?.options ?? []
  )
}

/** What a bind must keep of its source's mount: read-only and no-exec (a remount sets every flag it does not name anew). */
export function sourceRestrictions(options: readonly string[]): string[] {
  return options.filter((o) => o === 'ro' || o === 'noexec')
}

function readMountinfo(): string {
  return fs.readFileSync('/proc/self/mountinfo', 'utf8')
}

/** mountinfo(5): field 5 is the mount point, field 6 its per-mount options. */
function mountEntries(mountinfo: string): {point: string; options: string[]}[] {
  return mountinfo
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const fields = line.split(' ')
      const point = fields[4].replace(/\\([0-7]{3})/g, (_m, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)))
      return {point, options: (fields[5] ?? '').split(',')}
    })
}

async function mount(executor: Executor, argv: readonly string[], passFd?: number): Promise<void> {
  const result = await executor.run(argv, {timeoutMs: MOUNT_TIMEOUT_MS, ...(passFd === undefined ? {} : {passFd})})
  if (result.exitCode !== 0) {
    const why = result.stderr.trim().split('\n')[0] || (result.timedOut ? 'timed out' : `exit ${result.exitCode}`)
    throw new StateError('MOUNT_FAILED', `${argv.join(' ')}: ${why}`, {fix: ['gpu-cosplay recover undoes what was staged']})
  }
}
