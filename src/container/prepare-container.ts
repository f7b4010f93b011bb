/**
 * Everything `up` settles about the container before the GPU's first change: the Docker daemon answers, the image
 * is there (the default one is built on first use), the ssh key, the port. Nothing here touches the GPU, so a
 * missing Docker daemon or image fails before any GPU change.
 */
import {ContainerError} from '../core/errors.js'
import type {StatePolicy} from '../core/state-policy.js'
import {userDirOf} from '../core/state-layout.js'
import {parseVolumeSpec} from './container-flags.js'
import {containerPrivileges} from './container-privileges.js'
import {baseImageFor, buildCosplayImage, type CosplayBuild, defaultImageTag} from './cosplay-image.js'
import {assertCosplayImage, assertPinnedImage, pinImage} from './image-pin.js'
import type {ContainerLimits} from './container-limits.js'
import type {PinnedMounts} from './pin-mounts.js'
import type {BuildEvent} from './runtime.js'
import {DockerRuntime} from './runtime.js'
import {type ContainerOptions, containerUserName} from './session-container.js'
import {loadOrCreateSshIdentity, type SshIdentity} from './ssh-keys.js'
import {assertVolumeTargets} from './volume-targets.js'

/** What `up` asks for; the image, its reference and the authorized keys are settled here. */
export type PrepareInput = Omit<ContainerOptions, 'image' | 'imageRef' | 'authorizedKeys' | 'privileges' | 'privateOwner' | 'pinned' | 'limits'> & {
  /** the engine acting for a member: the mount sources, opened and checked as the member (pin-mounts.ts) */
  readonly pinned?: PinnedMounts
  /** the engine acting for a member: the box's container limits (container-limits.ts) */
  readonly limits?: ContainerLimits
  /** the image the user asked for; null: the default cosplay image */
  readonly imageRef: string | null
  /** `up --sudo` (already checked against the box's configuration) */
  readonly sudo: boolean
  /** this process is the engine (the call context's box is set): the default image must be the one it built, a user's own runs as the user */
  readonly inEngine: boolean
  /** whose files in the state directory are trusted: the caller's context's */
  readonly trust: StatePolicy
  readonly version: string
  readonly stateDir: string
  /** the person who runs up (under sudo, not root): the key folder and key are theirs */
  readonly keyOwner: {readonly uid: number; readonly gid: number}
  /**
   * set by the engine acting for a caller: the key it logs in with stays root's (in the caller's folder of the state
   * directory), and the caller's own public keys, read as the caller, are authorised beside it
   */
  readonly callerPublicKeys?: readonly string[]
  /** called before a first-use build starts, then with each build event */
  readonly onBuildStart?: (tag: string, base: string) => void
  readonly onBuildProgress?: (event: BuildEvent) => void
}

export type PreparedContainer = {
  readonly options: ContainerOptions
  readonly identity: SshIdentity
  /** the default image when this call had to build it */
  readonly built: CosplayBuild | null
}

/**
 * `mayBuild: false`: the default image being absent is answered with 'build-needed' instead of a build (minutes),
 * for a caller that holds the GPU lock meanwhile.
 */
export async function prepareContainer(
  input: PrepareInput,
  runtime: DockerRuntime = new DockerRuntime(),
  {mayBuild = true}: {readonly mayBuild?: boolean} = {},
): Promise<PreparedContainer | 'build-needed'> {
  await runtime.ping()
  const imageRef = input.imageRef ?? defaultImageTag(input.version)
  let image = await runtime.inspectImage(imageRef)
  let built: CosplayBuild | null = null
  if (!image) {
    if (input.imageRef !== null) {
      throw new ContainerError('IMAGE_NOT_FOUND', `no image ${imageRef} on this Docker engine`, {
        fix: [`docker pull ${imageRef}`, 'or leave out --image to use the cosplay image'],
      })
    }
    if (!mayBuild) return 'build-needed'
    const base = baseImageFor({})
    input.onBuildStart?.(imageRef, base)
    built = await buildCosplayImage(runtime, {base, tag: imageRef, version: input.version, packageRoot: input.packageRoot, onProgress: input.onBuildProgress})
    // by the ID the build reported: the tag may have been moved since
    image = await runtime.inspectImage(built.imageId ?? imageRef)
    if (!image) throw new ContainerError('IMAGE_NOT_FOUND', `the build of ${imageRef} left no image`)
    if (input.inEngine) pinImage(input.stateDir, imageRef, image.id)
  }
  if (input.imageRef === null) {
    assertCosplayImage(image, imageRef, input.version)
    if (input.inEngine) assertPinnedImage(input.stateDir, imageRef, image)
  }
  // the volume targets are checked against the image while the key is settled (nothing to do without --volume)
  const targets = input.pinned ? input.pinned.volumes.map((v) => v.target) : input.volumes.map((v) => parseVolumeSpec(v).target)
  const user = {uid: input.owner.uid, name: containerUserName(input.owner.user)}
  const checkingTargets = targets.length === 0 ? null : runtime.imageProbe(image.id, (probe) => assertVolumeTargets(probe, targets, user))
  checkingTargets?.catch(() => undefined) // awaited below
  const forCaller = input.callerPublicKeys !== undefined
  const identity = await loadOrCreateSshIdentity({
    userDir: userDirOf(input.stateDir, input.keyOwner.uid),
    ...(forCaller ? {homeDir: null, extraPublicKeys: input.callerPublicKeys} : {owner: input.keyOwner}),
    comment: `gpu-cosplay ${input.owner.user}`,
    trust: input.trust,
  })
  // 0: the Docker daemon picks a free port at bind time and the start reads it back (inspect). A port chosen here
  // first (get-port) could be taken by a concurrent `up` before Docker binds it.
  // Through the engine, any image the user names is theirs, whatever its labels say; only the pinned default is ours.
  const isCosplayImage = input.inEngine ? input.imageRef === null : image.isCosplayImage
  const privileges = containerPrivileges({sudo: input.sudo, isCosplayImage, inEngine: input.inEngine, owner: input.owner})
  // nothing runs as root: no sshd (it needs root), sessions go through docker exec
  const sshPort = image.hasSshd && !privileges.unprivileged ? (input.sshPort ?? 0) : null
  await checkingTargets
  return {
    identity,
    built,
    options: {
      image,
      imageRef,
      privileges,
      owner: input.owner,
      authorizedKeys: identity.authorizedKeys,
      workspace: input.workspace,
      volumes: input.volumes,
      pinned: input.pinned ?? null,
      env: input.env,
      stateDir: input.stateDir,
      // the session's private files are the key's: root's in the engine, else the user's own
      privateOwner: !forCaller && process.getuid?.() === 0 && input.keyOwner.uid !== 0 ? input.keyOwner : null,
      sshPort,
      sshBind: input.sshBind,
      shmSizeBytes: input.shmSizeBytes,
      limits: input.limits ?? null,
      hasTf32: input.hasTf32,
      packageRoot: input.packageRoot,
    },
  }
}
