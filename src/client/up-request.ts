/**
 * `up`'s flags as a request, made in the caller's own process with the caller's own rights: paths resolved (links
 * followed) as the caller sees them, durations and sizes parsed, and, for a member of a shared box, the ssh key their
 * session will accept made and read on their side. Bad values fail here, before anything is contacted. After the
 * engine answers, the member's own key and pinned host key go into the ways to connect it prints.
 */
import {accessSync, constants, existsSync, readFileSync, realpathSync, statSync} from 'node:fs'
import {homedir} from 'node:os'
import path, {join} from 'node:path'

import {isPublicKeyLine, sessionAlias} from '../container/connect-hints.js'
import {StateError} from '../core/errors.js'
import type {ClientKey} from '../remote/client-key.js'
import type {RequestOf} from '../system/engine-protocol.js'
import type {UpFlags, UpResult} from './up-session.js'

/** what a member's client needs of their key: where it is (for the ssh line) and its public half (for the request) */
export type MemberKey = Pick<ClientKey, 'privateKeyPath' | 'publicKey'>

/** The request `up GPU` with these flags makes; `memberKey`: a member's own key (null: root or a sandbox). */
export async function upRequestFrom(gpu: string, flags: UpFlags, memberKey: MemberKey | null, cwd: string = process.cwd()): Promise<RequestOf<'up'>> {
  const [{assertSessionName}, {parseDuration}] = await Promise.all([import('../apply/session-names.js'), import('../core/duration.js')])
  if (flags.name !== undefined) assertSessionName(flags.name)
  if (flags.image !== undefined) (await import('../core/image-ref.js')).assertImageRef(flags.image, '--image')
  return {
    op: 'up',
    target: gpu,
    // --count N without --host-gpu goes where the planner places the ranks (as plan --count does)
    hostGpu: flags['host-gpu'] ?? (flags.count !== undefined && flags.count > 1 ? null : 0),
    match: flags.match as RequestOf<'up'>['match'],
    basis: flags.datasheet === true ? 'datasheet' : 'measured',
    ...(flags.count !== undefined && flags.count > 1 ? {count: flags.count} : {}),
    name: flags.name ?? null,
    // oclif leaves a boolean flag that was not given undefined
    strict: flags.strict === true,
    noMps: flags['no-mps'] === true,
    lockClock: flags['lock-clock'] === true,
    capPower: flags['cap-power'] === true,
    ttlMs: flags.ttl === undefined ? null : parseDuration(flags.ttl, '--ttl'),
    wait: flags.wait === true,
    timeoutMs: flags.timeout === undefined ? null : parseDuration(flags.timeout, '--timeout'),
    container: flags['no-container'] ? null : await containerRequestFrom(flags, memberKey, cwd),
  }
}

async function containerRequestFrom(flags: UpFlags, memberKey: MemberKey | null, cwd: string): Promise<NonNullable<RequestOf<'up'>['container']>> {
  const {parseBindAddress, parseByteSize, parseEnvFlags, parseVolumeFlags, parseWorkspace} = await import('../container/container-flags.js')
  const member = memberKey !== null
  const asked = flags.workspace ?? '.'
  const workspace = member ? resolvedAsCaller(path.resolve(cwd, asked), '--workspace', 'folder-rw') : parseWorkspace(asked, cwd)
  const volumes = parseVolumeFlags(flags.volume ?? [], cwd).map((spec) => {
    const [source, target, mode] = spec.split(':')
    if (member && !source.startsWith('/')) {
      throw new StateError('BAD_VOLUME', `--volume ${spec}: a named Docker volume is shared by everyone on this box; mount a folder of yours`, {exit: 4})
    }
    const resolved = source.startsWith('/') && member ? resolvedAsCaller(source, `--volume ${spec}`, mode === 'ro' ? 'ro' : 'rw') : source
    return {source: resolved, target: path.posix.normalize(target), readOnly: mode === 'ro'}
  })
  return {
    image: flags.image ?? null,
    workspace,
    volumes,
    env: Object.entries(parseEnvFlags(flags.env ?? [])).map(([name, value]) => ({name, value})),
    sshPort: flags['ssh-port'] ?? null,
    sshBind: parseBindAddress(flags['ssh-bind']),
    shmSizeBytes: parseByteSize(flags['shm-size']),
    sudo: flags.sudo === true,
    publicKeys: memberKey ? memberPublicKeys(memberKey) : [],
  }
}

/**
 * A host path with its links followed by this process, as its user may: what the engine is asked to mount is what
 * the caller sees there now (the engine walks it again without following anything, and refuses a change).
 */
function resolvedAsCaller(file: string, flag: string, want: 'folder-rw' | 'rw' | 'ro'): string {
  const refuse = (what: string, cause?: unknown) =>
    new StateError('MOUNT_NOT_ALLOWED', `${flag}: ${file} ${what}`, {
      exit: 4,
      cause,
      fix: ['mount only what you may read (and write, for a read-write mount)'],
    })
  let real: string
  try {
    real = realpathSync(file)
  } catch (error) {
    throw refuse('does not exist (or you cannot reach it)', error)
  }
  const isDir = statSync(real).isDirectory()
  if (want === 'folder-rw' && !isDir) throw refuse('is not a folder')
  try {
    accessSync(real, constants.R_OK | (isDir ? constants.X_OK : 0))
  } catch (error) {
    throw refuse('is not readable by you', error)
  }
  if (want !== 'ro') {
    try {
      accessSync(real, constants.W_OK)
    } catch (error) {
      throw refuse('is not writable by you (mount it read-only with :ro)', error)
    }
  }
  return real
}

/** A member's keys for their session: the gpu-cosplay client key (made on first use) and ~/.ssh/id_ed25519.pub if they have one. */
function memberPublicKeys(key: MemberKey): string[] {
  const keys = [key.publicKey.trim()]
  const personal = join(homedir(), '.ssh', 'id_ed25519.pub')
  try {
    if (existsSync(personal) && statSync(personal).size < 16_384) {
      const line = readFileSync(personal, 'utf8').trim()
      if (isPublicKeyLine(line) && !keys.includes(line)) keys.push(line)
    }
  } catch {
    // unreadable: the client key alone
  }
  return keys
}

/**
 * A member's own key, made on first use in ~/.ssh/gpu-cosplay (as `ssh-config --install` does). Only its public half
 * is needed here: when both halves are there it is read without loading ssh2.
 */
export async function memberKey(): Promise<MemberKey> {
  const sshDir = join(homedir(), '.ssh')
  const privateKeyPath = join(sshDir, 'gpu-cosplay', 'client_ed25519')
  try {
    const publicKey = readFileSync(`${privateKeyPath}.pub`, 'utf8').trim()
    if (isPublicKeyLine(publicKey) && statSync(privateKeyPath).isFile()) return {privateKeyPath, publicKey}
  } catch {
    // not made yet (or unreadable): the full path below makes or repairs it
  }
  const {loadOrCreateClientKey} = await import('../remote/client-key.js')
  return loadOrCreateClientKey(sshDir)
}

/**
 * The engine answered for its own key: the member's `ssh` line, VS Code entry and key path become theirs, with the
 * container's host key pinned in a known_hosts file in their home.
 */
export async function withMemberKey(result: UpResult, key: MemberKey): Promise<UpResult> {
  const c = result.container
  if (c === null) return result
  const [{connectHints}, {writeSessionKnownHosts}] = await Promise.all([import('../container/connect-hints.js'), import('./session-known-hosts.js')])
  const knownHostsFile = c.hostKey === null ? null : writeSessionKnownHosts(join(homedir(), '.ssh'), sessionAlias(result.name), c.hostKey)
  const reach = {session: result.name, sshPort: c.sshPort, sshHost: c.sshHost, user: c.user} as Parameters<typeof connectHints>[0]
  return {...result, container: {...c, keyPath: key.privateKeyPath, knownHostsFile, connect: connectHints(reach, key.privateKeyPath, knownHostsFile)}}
}
