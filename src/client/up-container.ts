/**
 * The container half of `up`: its flags as the container layer takes them (bad values fail here, before anything is
 * contacted), the mounts and public keys as the caller may see them, the image build's progress, and what the
 * result says of the container. The container layer itself loads only for a session with a container.
 */
import {homedir} from 'node:os'
import {join} from 'node:path'

import type {Target} from '../catalog/types.js'
import type {LaunchedSession} from '../container/launch-session.js'
import type {ContainerLimits} from '../container/container-limits.js'
import type {PinnedMounts} from '../container/pin-mounts.js'
import type {PrepareInput} from '../container/prepare-container.js'
import type {BoxConfig} from '../core/box-config.js'
import type {CallContext} from '../core/call-context.js'
import {StateError} from '../core/errors.js'
import {assertImageRef} from '../core/image-ref.js'
import type {ContainerRequest} from '../system/engine-protocol.js'
import {LocalExecutor} from '../core/local-executor.js'
import {packageRoot} from '../core/package-root.js'

export type UpContainer = {
  id: string
  name: string
  image: string
  /** the image ID the container was created from: the tag may move, the session keeps this */
  imageId: string | null
  /** up --sudo: the session user has sudo, and so root over everything mounted into the container */
  sudo: boolean
  /** nothing in the container runs as root (your own image, through the box's engine) */
  unprivileged: boolean
  /** sshd's host key, recorded at the first login and pinned in knownHostsFile (null without sshd) */
  hostKey: string | null
  knownHostsFile: string | null
  /** null: the image has no sshd; `gpu-cosplay ssh` goes through docker exec */
  sshPort: number | null
  sshHost: string | null
  user: string
  workspace: string | null
  keyPath: string
  /** whether up had to build the default image first */
  builtImage: boolean
  /** from the start of up to the first ssh login (null without sshd) */
  sshLoginMs: number | null
  connect: {command: string; ssh: string | null; sshConfig: string | null}
}

/** up's container flags, as the command parsed them */
export type ContainerFlags = {
  readonly image?: string
  readonly workspace?: string
  readonly volume?: string[]
  readonly env?: string[]
  readonly 'ssh-port'?: number
  readonly 'ssh-bind': string
  readonly 'shm-size': string
  readonly sudo: boolean
}

/** the launched session, and who owns its ssh key */
export type Launched = LaunchedSession & {readonly keyOwner: PrepareInput['keyOwner']}

/**
 * The container part of an up request as the container layer takes it; what the caller may not have fails here,
 * before anything is contacted. For a member (the engine acting for them) their paths are resolved with their own
 * rights, sshd stays on loopback, and the keys authorised are the ones their client sent; root's own and a sandbox
 * user's request is taken as given.
 */
export async function containerInputFor(
  call: CallContext,
  request: ContainerRequest,
  target: Target,
  version: string,
): Promise<Omit<PrepareInput, 'stateDir'>> {
  const [{assertContainerSudoAllowed}, {parseBindAddress, parseWorkspace}] = await Promise.all([
    import('../container/container-privileges.js'),
    import('../container/container-flags.js'),
  ])
  const user = call.caller
  const forMember = call.actsForCaller && !user.isRoot
  // a member's container may get sudo only where the box allows it; root's own always may
  if (request.sudo) assertContainerSudoAllowed(forMember ? call.box : null)
  if (request.image !== null) assertImageRef(request.image, '--image')
  const sshBind = parseBindAddress(request.sshBind)
  if (forMember && !isLoopbackAddress(sshBind)) {
    throw new StateError('ROOT_ONLY', `up --ssh-bind ${sshBind} publishes sshd beyond this machine: on this shared box only root may`, {
      exit: 4,
      fix: ['leave out --ssh-bind (127.0.0.1), or reach the session from elsewhere with gpu-cosplay ssh --host'],
    })
  }
  const volumes = request.volumes.map((v) => [v.source, v.target, ...(v.readOnly ? ['ro'] : [])].join(':'))
  const asked = {workspace: request.workspace, volumes}
  // the engine acting for a member: what is mounted, the caller's own rights decide; the box's limits apply
  const member = forMember ? await callerView(call.box!, user, asked, request.shmSizeBytes) : null
  const mounts = member ?? {workspace: parseWorkspace(request.workspace, '/'), volumes}
  return {
    // the keys the member's client made and read on their side: root reads nothing in their home
    ...(member ? {callerPublicKeys: request.publicKeys, pinned: member.pinned, limits: member.limits} : {}),
    sudo: request.sudo,
    inEngine: call.box !== null,
    trust: call.policy,
    imageRef: request.image,
    version,
    packageRoot: packageRoot(),
    keyOwner: {uid: user.uid, gid: user.gid},
    // the entrypoint never makes root the session user (ssh must not depend on root login): root gets "cosplay"
    owner: user.uid === 0 ? {uid: 1000, gid: 1000, user: 'cosplay'} : {uid: user.uid, gid: user.gid, user: user.user},
    workspace: mounts.workspace,
    volumes: mounts.volumes,
    env: Object.fromEntries(request.env.map((e) => [e.name, e.value])),
    sshPort: request.sshPort,
    sshBind,
    shmSizeBytes: request.shmSizeBytes,
    hasTf32: target.tf32Tflops !== null,
  }
}

/** A literal loopback address (127.0.0.0/8, ::1): never a name, which could resolve anywhere. */
export function isLoopbackAddress(address: string): boolean {
  return address === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(address)
}

/**
 * What the engine acting for a member (`caller`) mounts and allows. The box's container limits first (an --shm-size
 * over the ceiling fails before anything is contacted). The mount sources are resolved as the caller (links of theirs
 * followed with their rights; the member's own client resolved them already, so this finds the same paths), then
 * opened by root without following any link, checked on the descriptors and kept open until the staging binds
 * (pin-mounts.ts): what is mounted is what was checked, also after a --wait.
 */
async function callerView(
  box: BoxConfig,
  caller: {uid: number; gid: number; user: string},
  asked: {workspace: string; volumes: string[]},
  shmSizeBytes: number | null,
): Promise<{workspace: string; volumes: string[]; pinned: PinnedMounts; limits: ContainerLimits}> {
  const [{resolveMountsAsCaller}, {pinMounts}, {parseVolumeSpec}, {memberContainerLimits}] = await Promise.all([
    import('../container/caller-files.js'),
    import('../container/pin-mounts.js'),
    import('../container/container-flags.js'),
    import('../container/container-limits.js'),
  ])
  const limits = memberContainerLimits(box, shmSizeBytes)
  const executor = new LocalExecutor()
  const mounts = await resolveMountsAsCaller(asked, caller, executor)
  const pinned = await pinMounts({workspace: mounts.workspace, volumes: mounts.volumes.map(parseVolumeSpec)}, caller, {executor})
  return {...mounts, pinned, limits}
}

/** The first use builds the cosplay image: say so, then its progress a line at a time. */
export function buildProgress(say: (line: string) => void): Pick<PrepareInput, 'onBuildStart' | 'onBuildProgress'> {
  return {
    onBuildStart: (tag, base) => say(`Building ${tag} on ${base} (first use; later runs reuse it)`),
    onBuildProgress: async (event) => {
      const {progressLine} = await import('../container/cosplay-image.js')
      const line = progressLine(event)
      if (line) say(`  ${line}`)
    },
  }
}

/** What the result says of the container: its image, the pinned sshd host key, how to connect. */
export async function upContainer(call: CallContext, {container: c, prepared, keyOwner}: Launched, startedAt: number): Promise<UpContainer> {
  const [{connectHints, sessionAlias}, {writeSessionKnownHosts}] = await Promise.all([
    import('../container/connect-hints.js'),
    import('./session-known-hosts.js'),
  ])
  const keyPath = prepared.identity.privateKeyPath
  // root acting for the user who ran sudo: the pinned key's file is theirs, like their key
  const owner = process.getuid?.() === 0 && keyOwner.uid !== 0 ? keyOwner : undefined
  const hostKey = c.hostKey ?? null
  // the engine acting for a member writes nothing in their home: ssh-config, run as them, pins the key there
  const knownHostsFile =
    hostKey === null || call.actsForCaller ? null : writeSessionKnownHosts(join(homedir(), '.ssh'), sessionAlias(c.session), hostKey, owner)
  return {
    id: c.id,
    name: c.name,
    image: c.image,
    imageId: c.imageId ?? null,
    sudo: c.sudo ?? false,
    unprivileged: c.unprivileged ?? false,
    hostKey,
    knownHostsFile,
    sshPort: c.sshPort,
    sshHost: c.sshHost,
    user: c.user,
    workspace: c.workspace,
    keyPath,
    builtImage: prepared.built !== null,
    sshLoginMs: c.sshPort === null ? null : Date.now() - startedAt,
    connect: connectHints(c, keyPath, knownHostsFile),
  }
}
