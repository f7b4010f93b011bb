/**
 * Where a --volume may go in the container. Its target, resolved inside the image the way Docker resolves it at start
 * (links such as /var/run -> /run count), cannot be, contain or lie inside what root runs or acts on there: a mount
 * there would put the member's files where the root entrypoint, sshd or the programs they run read them. Nor may a
 * target lie inside /workspace or inside another volume's target: those folders are the member's own files when the
 * runtime makes the mount point, and a link of theirs there would lead it anywhere in the container. The session user's
 * home itself (and anything containing it) is refused too; folders below it are allowed, but for ~/.ssh, which root
 * writes.
 *
 * The image is read through Docker (runtime.imageProbe: a container created and never started): each prefix of a path
 * is stat'ed for its link target; the user's home comes from the image's /etc/passwd, by uid, else by name, else
 * /home/<name>, as the entrypoint's ensure_user finds it.
 */
import path from 'node:path'

import {ContainerError} from '../core/errors.js'
import type {ImageProbe} from './runtime.js'

/** Root's territory: no target may be it, contain it or lie inside it. */
export const ROOT_TREES = [
  '/etc',
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/opt/gpu-cosplay',
  '/run',
  '/root',
  '/tmp/gpu-cosplay',
  '/dev',
  '/proc',
  '/sys',
  // sshd, as root, writes lastlog and wtmp there
  '/var/log',
  '/workspace',
] as const

/** passwd is small; a bigger one is read this far. */
const PASSWD_MAX_BYTES = 1 << 20

export type TargetUser = {readonly uid: number; readonly name: string}

/**
 * Throws VOLUME_TARGET_NOT_ALLOWED (exit 4) for the first target that may not be mounted; `targets` as given (absolute).
 * Every path is resolved in the image at once (one request per path component, all in flight together).
 */
export async function assertVolumeTargets(probe: ImageProbe, targets: readonly string[], user: TargetUser): Promise<void> {
  if (targets.length === 0) return
  const resolve = (p: string) => resolveInImage(probe, p)
  const [resolvedTargets, trees, home] = await Promise.all([
    Promise.all(targets.map(resolve)),
    Promise.all(ROOT_TREES.map(async (tree) => [...new Set([tree, await resolve(tree)])])),
    homeIn(probe, user).then(async (h) => [...new Set([h, await resolve(h)])]),
  ])
  const protectedTrees = [...trees.flat(), ...home.map((h) => path.posix.join(h, '.ssh'))]
  for (const [i, target] of targets.entries()) {
    const why = whyNotAllowed(resolvedTargets[i], {trees: protectedTrees, folders: home, others: resolvedTargets.filter((_, j) => j !== i)})
    if (why !== null) {
      const shown = resolvedTargets[i] === path.posix.normalize(target) ? target : `${target} (${resolvedTargets[i]} in the image)`
      throw new ContainerError('VOLUME_TARGET_NOT_ALLOWED', `--volume ...:${shown}: ${why}`, {
        exit: 4,
        fix: ['mount it elsewhere, e.g. under /data, /mnt or a folder in your home (~/data)'],
      })
    }
  }
}

/**
 * Why a resolved target may not be mounted, or null. `trees`: may not be, contain or lie inside; `folders`: may not be
 * or contain; `others`: the other volumes' targets, which it may neither equal nor lie inside.
 */
export function whyNotAllowed(
  target: string,
  guarded: {readonly trees: readonly string[]; readonly folders: readonly string[]; readonly others: readonly string[]},
): string | null {
  if (target === '/') return 'the whole container'
  if (/^\/lib[^/]*(\/|$)/.test(target)) return 'root runs what is there'
  for (const folder of guarded.folders) {
    if (target === folder) return 'is your home folder itself (a folder inside it is fine)'
    if (inside(folder, target)) return `contains your home folder ${folder}`
  }
  for (const tree of guarded.trees) {
    if (target === tree || inside(target, tree)) return `lies in ${tree}, which root runs or acts on`
    if (inside(tree, target)) return `contains ${tree}, which root runs or acts on`
  }
  for (const other of guarded.others) {
    if (target === other) return 'is the target of another --volume too'
    if (inside(target, other)) return `lies inside another --volume's target ${other}`
  }
  return null
}

function inside(p: string, folder: string): boolean {
  return folder === '/' ? p !== '/' : p.startsWith(`${folder}/`)
}

/**
 * The path as Docker will find it in the image: each component that exists and is a link replaced by where it leads
 * (Docker states that fully resolved); from the first that does not exist on, the rest as written.
 */
export async function resolveInImage(probe: ImageProbe, p: string): Promise<string> {
  const names = path.posix.normalize(p).split('/').filter(Boolean)
  let resolved = '/'
  for (const [i, name] of names.entries()) {
    const candidate = path.posix.join(resolved, name)
    const stat = await probe.stat(candidate)
    if (stat === null) return path.posix.join(candidate, ...names.slice(i + 1))
    resolved = stat.linkTarget === '' ? candidate : path.posix.normalize(stat.linkTarget)
  }
  return resolved
}

/** The session user's home in the image, as the entrypoint's ensure_user will settle it. */
export async function homeIn(probe: ImageProbe, user: TargetUser): Promise<string> {
  const passwd = (await probe.readFile('/etc/passwd', PASSWD_MAX_BYTES)) ?? ''
  const entries = passwd
    .split('\n')
    .map((line) => line.split(':'))
    .filter((f) => f.length >= 7)
  const home = (entries.find((f) => f[2] === String(user.uid)) ?? entries.find((f) => f[0] === user.name))?.[5]
  return home && home.startsWith('/') ? path.posix.normalize(home) : `/home/${user.name}`
}
