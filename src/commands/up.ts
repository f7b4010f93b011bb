import {homedir} from 'node:os'
import path, {join} from 'node:path'

import {Args, Flags, type Interfaces, ux} from '@oclif/core'

import type {ActiveSession} from '../apply/bring-up.js'
import {resolveTarget} from '../catalog/resolve-target.js'
import type {Target} from '../catalog/types.js'
import type {LaunchedSession} from '../container/launch-session.js'
import type {PrepareInput} from '../container/prepare-container.js'
import {actsForCaller} from '../core/box-config.js'
import {requireRootOnSharedBox} from '../core/invoking-user.js'
import {packageRoot} from '../core/package-root.js'
import {shellQuote} from '../export/shell-words.js'
import {OBJECTIVES, type Objective, type Plan} from '../plan/types.js'
import {BaseCommand} from '../shell/base-command.js'
import {placeFlag} from '../shell/host-flag.js'
import type {Placement} from '../client/choose-host.js'
import type {HostAddress} from '../remote/host-url.js'
import {currentCatalog} from '../client/context.js'

export type UpResult = {
  name: string
  target: {key: string; name: string}
  hostGpu: {index: number; uuid: string}
  mig: {uuid: string | null; gpuInstanceId: number | null; computeInstanceId: number | null; profile: string} | null
  clockMHz: number | null
  powerLimitW: number | null
  vramCapGiB: number
  /** per-session shaping inside the slice; null without MPS on this host */
  mps: {activeThreadPercentage: number; smCount: number; pinnedMemLimitMiB: number; pipeDirectory: string} | null
  /** which GPU-wide settings this session holds, and why */
  gpuWide: Plan['gpuWide']
  /** what a workload outside a container needs: device visibility plus the costume's variables */
  env: Record<string, string>
  plan: Plan
  warnings: string[]
  /** sessions of dead processes rolled back first, and other things worth knowing */
  notes: string[]
  /** null with --no-container */
  container: UpContainer | null
  /** only with several --host boxes: where the session went, and what every box offered */
  placement?: Placement
}

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

type UpFlags = Interfaces.InferredFlags<typeof Up.flags>

export default class Up extends BaseCommand {
  static summary = 'Dress a host GPU up as another GPU: MIG slice, clock lock, power cap, VRAM cap'
  static description = `Plans like \`plan\`, then applies it as a journaled session: turns MIG mode on if needed (and records that it did), creates one GPU instance and one compute instance, and takes shares ("leases") of the GPU-wide settings: persistence mode, clock lock, power limit. Other sessions on the same GPU keep theirs; a session that wants a different clock or power limit shares the one in force (the plan is recomputed with it), or fails with --strict.

Every change is written to the state directory before it is made; Ctrl-C finishes the current step and undoes the rest, and \`gpu-cosplay recover\` finishes the job after a crash. \`down\` puts everything back.

Then it starts a container on the slice, in the same journal (the GPU-wide settings are taken while it boots): the cosplay image (built on first use, before any GPU change) or --image, your workspace at /workspace, you as the user, sshd on 127.0.0.1, and returns once ssh logs in. With --no-container it stops after the GPU part and prints what your own workload needs.`
  static examples = [
    '<%= config.bin %> up 3090',
    '<%= config.bin %> up 3090 --no-container',
    '<%= config.bin %> up t4 --workspace ~/proj --volume /data:/data:ro --env HF_HOME=/data/hf',
    '<%= config.bin %> up t4 --host-gpu 1 --match fp32 --name t4-test --no-container',
    '<%= config.bin %> up 4090 --no-container --strict --json',
  ]
  static args = {gpu: Args.string({required: true, description: 'target GPU, e.g. 3090, t4, a100-80g'})}
  static flags = {
    'host-gpu': Flags.integer({description: 'index of the host GPU to use', min: 0, default: 0}),
    match: Flags.string({description: 'what to match most closely', options: [...OBJECTIVES], default: 'balanced'}),
    name: Flags.string({description: 'session name (default: <user>-<target>)'}),
    'no-container': Flags.boolean({description: 'only prepare the GPU; print the variables your own workload needs'}),
    strict: Flags.boolean({description: 'fail instead of sharing a clock or power limit another session holds'}),
    'lock-clock': Flags.boolean({
      description: 'lock the GPU-wide clock even on a slice (it binds every tenant of the GPU; by default only a whole-GPU session does)',
    }),
    'cap-power': Flags.boolean({description: "cap the GPU-wide power limit at the target's TDP even on a slice (it binds every tenant of the GPU)"}),
    image: Flags.string({
      description: 'image to run (default: the cosplay image, built on first use); any other image gets the entrypoint and hooks bind-mounted',
    }),
    workspace: Flags.string({description: 'host folder mounted at /workspace (default: the current folder)'}),
    volume: Flags.string({description: 'extra bind mount HOST:CONTAINER[:ro] (repeatable)', multiple: true}),
    env: Flags.string({description: 'extra variable NAME=VALUE for the container (repeatable)', multiple: true}),
    'ssh-port': Flags.integer({description: "host port for the container's sshd (default: a free one)", min: 1, max: 65535}),
    'ssh-bind': Flags.string({description: 'host address sshd is published on', default: '127.0.0.1'}),
    'shm-size': Flags.string({description: 'size of /dev/shm, e.g. 1g', default: '1g'}),
    sudo: Flags.boolean({
      description:
        'give yourself sudo in the container. That is root inside it, and so over everything mounted into it: a setuid-root file written to the workspace is root on the host. Without it, nothing you run there can become root. On a shared box only where the administrator allowed it',
      exclusive: ['no-container'],
    }),
    ...placeFlag,
  }

  async run(): Promise<UpResult> {
    const {args, flags} = await this.parse(Up)
    if (flags.host?.trim()) {
      const hosts = (await import('../remote/open-host.js')).hostsFrom(flags.host)
      if (hosts.length > 1) return this.upOnBestHost(hosts, args.gpu, flags)
    }
    const remote = await this.forwardToHost(flags.host, renderUp)
    if (remote) return remote.result
    const catalog = await currentCatalog()
    const target = resolveTarget(catalog, args.gpu)
    // Flags are checked before Docker or the GPU is contacted.
    if (flags.name !== undefined) (await import('../apply/session-names.js')).assertSessionName(flags.name)
    // on a shared box a member's session may not bind every tenant's clock or power, nor a privileged host port
    if (flags['lock-clock']) requireRootOnSharedBox('up --lock-clock', "locks the clock of every tenant's GPU")
    if (flags['cap-power']) requireRootOnSharedBox('up --cap-power', "caps the power of every tenant's GPU")
    if ((flags['ssh-port'] ?? 1024) < 1024) requireRootOnSharedBox(`up --ssh-port ${flags['ssh-port']}`, 'takes a privileged port of the host')
    const containerInput = flags['no-container'] ? null : await containerInputFrom(flags, target, this.config.version)
    // The first look at the GPUs (`-L`, read-only), started by bin/run.js before oclif loaded, or now.
    const firstListing = (await import('../client/first-listing.js')).firstListing()
    const [{applyContext, cancelOnSignals}, {bringUp}, {findMpsControl}] = await Promise.all([
      import('../client/apply-context.js'),
      import('../apply/bring-up.js'),
      import('../host/mps.js'),
    ])
    const ctx = await applyContext({mutates: true})
    const quiet = this.jsonEnabled()
    const say = (message: string) => (quiet ? undefined : this.logToStderr(message))
    const startedAt = Date.now()
    const cancel = cancelOnSignals(say)
    const request = {
      target,
      hostGpu: flags['host-gpu'],
      objective: flags.match as Objective,
      strict: flags.strict,
      name: flags.name ?? null,
      owner: ctx.owner,
      pid: process.pid,
      hostname: ctx.hostname,
      gpuWide: {lockClock: flags['lock-clock'], capPower: flags['cap-power']},
      mpsAvailable: findMpsControl(process.env) !== null,
      // with a container the entrypoint runs the daemon inside it, as the session user
      mpsOnHost: containerInput ? null : {owner: {uid: ctx.user.uid, gid: ctx.user.gid}, runAsOwner: process.getuid?.() === 0 && ctx.user.uid !== 0},
    }
    const deps = {...ctx.deps, firstListing, catalog, cancel, onProgress: say, isRoot: ctx.isRoot}
    if (!quiet) ux.action.start(`Applying ${target.name} to GPU ${flags['host-gpu']}`)
    try {
      let launched: LaunchedSession | null = null
      let active: ActiveSession
      if (containerInput) {
        const {launchSession} = await import('../container/launch-session.js')
        launched = await launchSession(request, {...containerInput, stateDir: ctx.stateDir.dir, ...this.buildProgress(quiet)}, deps, {
          onWait: (what) => {
            cancel.dispose()
            if (!quiet) ux.action.start(`Waiting for ${what}`)
          },
        })
        active = launched.active
      } else {
        active = await bringUp(request, deps)
      }
      if (!quiet) ux.action.stop(launched ? `${Date.now() - startedAt} ms` : 'done')
      const result = await upResult(active, target, launched && {...launched, keyOwner: containerInput!.keyOwner}, startedAt)
      if (!quiet) this.log(renderUp(result))
      return result
    } catch (error) {
      if (!quiet) ux.action.stop('failed')
      throw error
    } finally {
      cancel.dispose()
    }
  }

  /** Several boxes: plan on each, then up on the one whose plan comes closest (choose-host.ts). */
  private async upOnBestHost(hosts: HostAddress[], gpu: string, flags: UpFlags): Promise<UpResult> {
    const [{rankHosts, upOnBest}, {describePlacement}] = await Promise.all([import('../client/choose-host.js'), import('../plan/placement.js')])
    const quiet = this.jsonEnabled()
    const say = (line: string) => (quiet ? undefined : this.logToStderr(line))
    say(`Planning ${gpu} on ${hosts.map((h) => h.label).join(', ')}`)
    const planArgs = [
      gpu,
      ...['--match', flags.match, '--host-gpu', String(flags['host-gpu'])],
      ...(flags.strict ? ['--strict'] : []),
      ...(flags['lock-clock'] ? ['--lock-clock'] : []),
      ...(flags['cap-power'] ? ['--cap-power'] : []),
    ]
    const ranked = await rankHosts(hosts, planArgs, this.config.version)
    if (ranked[0].plan !== null) say(describePlacement(ranked))
    const {result, placement} = await upOnBest(
      ranked,
      async (host) => {
        const remote = await this.forwardToHost<UpResult>(host, renderUp)
        if (!remote) throw new Error(`no box named ${host}`)
        return remote.result
      },
      say,
    )
    return {...result, placement}
  }

  private buildProgress(quiet: boolean): Pick<PrepareInput, 'onBuildStart' | 'onBuildProgress'> {
    return {
      onBuildStart: (tag, base) => quiet || this.logToStderr(`Building ${tag} on ${base} (first use; later runs reuse it)`),
      onBuildProgress: async (event) => {
        const {progressLine} = await import('../container/cosplay-image.js')
        const line = progressLine(event)
        if (line && !quiet) this.logToStderr(`  ${line}`)
      },
    }
  }
}

/** up's container flags as the container layer takes them; bad values fail here, before anything is contacted. */
async function containerInputFrom(flags: UpFlags, target: Target, version: string): Promise<Omit<PrepareInput, 'stateDir'>> {
  const [{parseVolumeFlags, parseEnvFlags, parseByteSize, parseBindAddress, parseWorkspace}, {invokingUser}, {engineBoxConfig}, {assertContainerSudoAllowed}] =
    await Promise.all([
      import('../container/container-flags.js'),
      import('../core/invoking-user.js'),
      import('../core/box-config.js'),
      import('../container/container-privileges.js'),
    ])
  const user = invokingUser()
  // a member's container may get sudo only where the box allows it; root's own always may
  if (flags.sudo) assertContainerSudoAllowed(actsForCaller() && !user.isRoot ? engineBoxConfig() : null)
  const workspace = flags.workspace ?? '.'
  const asked = {workspace: path.resolve(process.cwd(), workspace), volumes: parseVolumeFlags(flags.volume ?? [], process.cwd())}
  // the engine acting for a member: what is mounted and which keys are read, the caller's own rights decide
  const forCaller = actsForCaller() && !user.isRoot ? await callerView(user, asked) : null
  return {
    ...(forCaller ? {callerPublicKeys: forCaller.publicKeys} : {}),
    sudo: flags.sudo,
    inEngine: engineBoxConfig() !== null,
    imageRef: flags.image ?? null,
    version,
    packageRoot: packageRoot(),
    keyOwner: {uid: user.uid, gid: user.gid},
    // the entrypoint never makes root the session user (ssh must not depend on root login): root gets "cosplay"
    owner: user.uid === 0 ? {uid: 1000, gid: 1000, user: 'cosplay'} : {uid: user.uid, gid: user.gid, user: user.user},
    workspace: forCaller ? forCaller.workspace : parseWorkspace(workspace, process.cwd()),
    volumes: forCaller ? forCaller.volumes : asked.volumes,
    env: parseEnvFlags(flags.env ?? []),
    sshPort: flags['ssh-port'] ?? null,
    sshBind: parseBindAddress(flags['ssh-bind']),
    shmSizeBytes: parseByteSize(flags['shm-size']),
    hasTf32: target.tf32Tflops !== null,
  }
}

/** The mounts resolved, and the public keys read, as the caller (see container/caller-files.ts). */
async function callerView(
  caller: {uid: number; gid: number; user: string},
  asked: {workspace: string; volumes: string[]},
): Promise<{workspace: string; volumes: string[]; publicKeys: string[]}> {
  const [{resolveMountsAsCaller, callerPublicKeys, callerHome}, {LocalExecutor}] = await Promise.all([
    import('../container/caller-files.js'),
    import('../core/local-executor.js'),
  ])
  const executor = new LocalExecutor()
  const mounts = await resolveMountsAsCaller(asked, caller, executor)
  const home = await callerHome(caller, executor)
  return {...mounts, publicKeys: home === null ? [] : await callerPublicKeys(caller, home, executor)}
}

type Launched = LaunchedSession & {readonly keyOwner: PrepareInput['keyOwner']}

async function upResult(active: ActiveSession, target: Target, launched: Launched | null, startedAt: number): Promise<UpResult> {
  const [{costumeEnv}, {CONTAINER_MPS_DIRS}, {rolledBackNotes}] = await Promise.all([
    import('../plan/costume-env.js'),
    import('../core/names.js'),
    import('../apply/book-store.js'),
  ])
  const device = active.session.mig?.uuid ?? active.gpuUuid
  const mpsDirs = launched
    ? active.plan.mps
      ? CONTAINER_MPS_DIRS
      : null
    : active.mpsDaemon && {pipe: active.mpsDaemon.pipeDirectory, log: active.mpsDaemon.logDirectory}
  return {
    name: active.name,
    target: active.session.target,
    hostGpu: {index: active.gpuIndex, uuid: active.gpuUuid},
    mig: active.session.mig && {
      uuid: active.session.mig.uuid,
      gpuInstanceId: active.session.mig.gpuInstanceId,
      computeInstanceId: active.session.mig.computeInstanceId,
      profile: active.session.mig.profile,
    },
    clockMHz: active.plan.clockMHz,
    powerLimitW: active.plan.powerLimitW,
    vramCapGiB: active.plan.vramCapGiB,
    mps: active.plan.mps && mpsDirs && {...active.plan.mps, pipeDirectory: mpsDirs.pipe},
    gpuWide: active.plan.gpuWide,
    env: {
      CUDA_VISIBLE_DEVICES: device,
      NVIDIA_VISIBLE_DEVICES: device,
      ...costumeEnv(active.plan, {hasTf32: target.tf32Tflops !== null}, active.physicalMiB, active.name),
      ...(mpsDirs ? {CUDA_MPS_PIPE_DIRECTORY: mpsDirs.pipe, CUDA_MPS_LOG_DIRECTORY: mpsDirs.log} : {}),
    },
    plan: active.plan,
    warnings: [...active.plan.warnings],
    notes: [...active.notes, ...rolledBackNotes(active.recovered)],
    container: launched && (await upContainer(launched, startedAt)),
  }
}

async function upContainer({container: c, prepared, keyOwner}: Launched, startedAt: number): Promise<UpContainer> {
  const [{connectHints, sessionAlias}, {writeSessionKnownHosts}] = await Promise.all([
    import('../container/connect-hints.js'),
    import('../client/session-known-hosts.js'),
  ])
  const keyPath = prepared.identity.privateKeyPath
  // root acting for the user who ran sudo: the pinned key's file is theirs, like their key
  const owner = process.getuid?.() === 0 && keyOwner.uid !== 0 ? keyOwner : undefined
  const hostKey = c.hostKey ?? null
  // the engine acting for a member writes nothing in their home: ssh-config, run as them, pins the key there
  const knownHostsFile = hostKey === null || actsForCaller() ? null : writeSessionKnownHosts(join(homedir(), '.ssh'), sessionAlias(c.session), hostKey, owner)
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

export function renderUp(r: UpResult): string {
  const slice = r.mig ? `MIG ${r.mig.profile} (GI ${r.mig.gpuInstanceId}, CI ${r.mig.computeInstanceId}) ${r.mig.uuid}` : 'whole GPU'
  const power = r.powerLimitW === null ? 'as found' : `${r.powerLimitW} W`
  const lines = [
    `Session ${r.name}: ${r.target.name} on GPU ${r.hostGpu.index}`,
    `  slice:  ${slice}`,
    `  clock:  ${r.clockMHz === null ? 'unlocked' : `${r.clockMHz} MHz`}   power: ${power}   VRAM cap: ${r.vramCapGiB} GiB`,
    r.mps
      ? `  MPS:    ${r.mps.activeThreadPercentage}% active threads = ${r.mps.smCount} SMs, ${r.mps.pinnedMemLimitMiB} MiB pinned (${r.mps.pipeDirectory})`
      : "  MPS:    not used (no nvidia-cuda-mps-control on this host): the VRAM cap is the costume's, for torch/JAX/CuPy only",
    `  GPU-wide: ${r.gpuWide.reason}`,
    '',
    ...(r.container
      ? renderContainer(r.container, r.name)
      : ['For your own workload (the costume hooks read these):', ...Object.entries(r.env).map(([k, v]) => `  export ${k}=${shellQuote(v)}`)]),
    '',
    `End it with: gpu-cosplay down ${r.name}`,
  ]
  for (const w of r.warnings) lines.push(`! ${w}`)
  for (const n of r.notes) lines.push(`note: ${n}`)
  return lines.join('\n')
}

function renderContainer(c: UpContainer, session: string): string[] {
  const root = c.sudo
    ? 'you have sudo there (up --sudo): root inside, and over everything mounted into it'
    : c.unprivileged
      ? `nothing runs as root there (your own image runs as ${c.user}, sessions through docker exec)`
      : 'no sudo, no setuid: nothing you run there can become root'
  const lines = [`Container ${c.name} (${c.image}), /workspace = ${c.workspace ?? '-'}`, `  root:   ${root}`, '', 'Connect:', `  ${c.connect.command}`]
  if (c.connect.ssh) lines.push(`  ${c.connect.ssh}`)
  else if (c.sshPort !== null)
    lines.push(`  for VS Code Remote-SSH and plain ssh: gpu-cosplay ssh-config ${session} --install, then ssh gpu-cosplay-${session}`)
  else lines.push('  (the image has no sshd: gpu-cosplay ssh and exec go through docker exec)')
  if (c.connect.sshConfig)
    lines.push(
      '',
      'For VS Code Remote-SSH, add to ~/.ssh/config (or: gpu-cosplay ssh-config NAME >> ~/.ssh/config):',
      ...c.connect.sshConfig.split('\n').map((l) => `  ${l}`),
    )
  return lines
}
