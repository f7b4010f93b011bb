import path from 'node:path'

import {Args, Flags, ux} from '@oclif/core'

import {resolveTarget} from '../catalog/resolve-target.js'
import {packageRoot} from '../core/package-root.js'
import {OBJECTIVES, type Objective, type Plan} from '../plan/types.js'
import {BaseCommand} from './support/base-command.js'
import {currentCatalog} from './support/context.js'

export type UpResult = {
  name: string
  target: {key: string; name: string}
  hostGpu: {index: number; uuid: string}
  mig: {uuid: string | null; gpuInstanceId: number | null; computeInstanceId: number | null; profile: string} | null
  clockMHz: number | null
  powerLimitW: number
  vramCapGB: number
  /** what a workload outside a container needs: device visibility plus the costume's variables */
  env: Record<string, string>
  plan: Plan
  warnings: string[]
  /** sessions of dead processes rolled back first, and other things worth knowing */
  notes: string[]
  /** null with --no-container */
  container: UpContainer | null
}

export type UpContainer = {
  id: string
  name: string
  image: string
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

export default class Up extends BaseCommand {
  static summary = 'Dress a host GPU up as another GPU: MIG slice, clock lock, power cap, VRAM cap'
  static description = `Plans like \`plan\`, then applies it as a journaled session: turns MIG mode on if needed (and records
that it did), creates one GPU instance and one compute instance, and takes shares ("leases") of the GPU-wide
settings: persistence mode, clock lock, power limit. Other sessions on the same GPU keep theirs; a session that
wants a different clock or power limit shares the one in force (the plan is recomputed with it), or fails with --strict.
Every change is written to the state directory before it is made; Ctrl-C finishes the current step and undoes
the rest, and \`gpu-cosplay recover\` finishes the job after a crash. \`down\` puts everything back.
Then it starts a container on the slice (the last step of the same journal, so \`down\` removes it first):
the cosplay image (built on first use) or --image, your workspace at /workspace, you as the user, sshd on
127.0.0.1, and returns once ssh logs in. With --no-container it stops after the GPU part and prints what
your own workload needs.`
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
    image: Flags.string({description: 'image to run (default: the cosplay image, built on first use); any other image gets the entrypoint and hooks bind-mounted'}),
    workspace: Flags.string({description: 'host folder mounted at /workspace (default: the current folder)'}),
    volume: Flags.string({description: 'extra bind mount HOST:CONTAINER[:ro] (repeatable)', multiple: true, default: []}),
    env: Flags.string({description: 'extra variable NAME=VALUE for the container (repeatable)', multiple: true, default: []}),
    'ssh-port': Flags.integer({description: 'host port for the container\'s sshd (default: a free one)', min: 1, max: 65535}),
    'ssh-bind': Flags.string({description: 'host address sshd is published on', default: '127.0.0.1'}),
    'shm-size': Flags.string({description: 'size of /dev/shm, e.g. 1g', default: '1g'}),
  }

  async run(): Promise<UpResult> {
    const {args, flags} = await this.parse(Up)
    const target = resolveTarget(await currentCatalog(), args.gpu)
    const [{applyContext, cancelOnSignals}, {bringUp}, {costumeEnv}] = await Promise.all([
      import('./support/apply-context.js'),
      import('../apply/bring-up.js'),
      import('../plan/costume-env.js'),
      // registers the 'start-container' step, so a crashed session's container can be undone here too
      import('../container/container-step.js'),
    ])
    const ctx = await applyContext({mutates: true})
    const quiet = this.jsonEnabled()
    const say = (message: string) => (quiet ? undefined : this.logToStderr(message))
    const startedAt = Date.now()
    // Docker, image (built on first use), key and port are settled before the GPU lock: no GPU change without them.
    const container = flags['no-container'] ? null : await this.prepareContainer(flags, ctx, target.tf32Tflops !== null, quiet)
    const cancel = cancelOnSignals(say)
    if (!quiet) ux.action.start(`Applying ${target.name} to GPU ${flags['host-gpu']}`)
    try {
      const active = await bringUp(
        {
          target,
          hostGpu: flags['host-gpu'],
          objective: flags.match as Objective,
          strict: flags.strict,
          name: flags.name ?? null,
          owner: ctx.owner,
          pid: process.pid,
          hostname: ctx.hostname,
          bootId: ctx.bootId,
          ...(container ? {extraSteps: container.module.containerSteps(container.prepared.options, container.step)} : {}),
        },
        {gpu: ctx.gpu, stateDir: ctx.stateDir.dir, catalog: await currentCatalog(), cancel, onProgress: say},
      )
      if (!quiet) ux.action.stop('done')
      const device = active.session.mig?.uuid ?? active.gpuUuid
      const result: UpResult = {
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
        vramCapGB: active.plan.vramCapGB,
        env: {
          CUDA_VISIBLE_DEVICES: device,
          NVIDIA_VISIBLE_DEVICES: device,
          ...costumeEnv(active.plan, {hasTf32: target.tf32Tflops !== null}, active.physicalMiB, active.name),
        },
        plan: active.plan,
        warnings: [...active.plan.warnings],
        notes: [...active.notes, ...active.recovered.map((n) => `rolled back the half-done session ${n} of a process that died`)],
        container: null,
      }
      cancel.dispose()
      if (container) result.container = await this.awaitLogin(active.session, container, startedAt, quiet, ctx)
      if (!quiet) this.log(renderUp(result))
      return result
    } catch (error) {
      if (!quiet) ux.action.stop('failed')
      throw error
    } finally {
      cancel.dispose()
    }
  }

  private async prepareContainer(flags: UpFlags, ctx: {stateDir: {dir: string}; owner: {uid: number; user: string}}, hasTf32: boolean, quiet: boolean) {
    const [module, {prepareContainer}, {startContainer}, {progressLine}] = await Promise.all([
      import('../container/session-container.js'),
      import('../container/prepare-container.js'),
      import('../container/container-step.js'),
      import('../container/cosplay-image.js'),
    ])
    const sudoGid = Number(process.env.SUDO_GID)
    const gid = process.getuid?.() === 0 && process.env.SUDO_USER && Number.isInteger(sudoGid) ? sudoGid : (process.getgid?.() ?? ctx.owner.uid)
    const prepared = await prepareContainer({
      imageRef: flags.image ?? null,
      version: this.config.version,
      packageRoot: packageRoot(),
      stateDir: ctx.stateDir.dir,
      ownerUid: ctx.owner.uid,
      // the entrypoint never makes root the session user (ssh must not depend on root login): root gets "cosplay"
      owner: ctx.owner.uid === 0 ? {uid: 1000, gid: 1000, user: 'cosplay'} : {uid: ctx.owner.uid, gid, user: ctx.owner.user},
      workspace: path.resolve(flags.workspace ?? process.cwd()),
      volumes: module.parseVolumeFlags(flags.volume, process.cwd()),
      env: module.parseEnvFlags(flags.env),
      sshPort: flags['ssh-port'] ?? null,
      sshBind: flags['ssh-bind'],
      shmSizeBytes: module.parseByteSize(flags['shm-size']),
      hasTf32,
      onBuildStart: (tag, base) => quiet || this.logToStderr(`Building ${tag} on ${base} (first use; later runs reuse it)`),
      onBuildProgress: (event) => {
        const line = progressLine(event)
        if (line && !quiet) this.logToStderr(`  ${line}`)
      },
    })
    return {module, prepared, step: startContainer}
  }

  /** Waits for the first ssh login (the GPU lock is already released); a session that cannot be reached is ended. */
  private async awaitLogin(
    session: Parameters<typeof import('../container/session-container.js').sessionContainer>[0],
    container: Awaited<ReturnType<Up['prepareContainer']>>,
    startedAt: number,
    quiet: boolean,
    ctx: Awaited<ReturnType<typeof import('./support/apply-context.js').applyContext>>,
  ): Promise<UpContainer> {
    const [{sessionContainer}, {connectHints}] = await Promise.all([import('../container/session-container.js'), import('../container/connect-hints.js')])
    const c = sessionContainer(session)
    const keyPath = container.prepared.identity.privateKeyPath
    let sshLoginMs: number | null = null
    if (c.sshPort !== null && c.sshHost !== null) {
      if (!quiet) ux.action.start(`Waiting for ssh on ${c.sshHost}:${c.sshPort}`)
      try {
        const {SshSession} = await import('../container/ssh-client.js')
        const ssh = await SshSession.connectWithRetry({host: c.sshHost, port: c.sshPort, username: c.user, privateKey: container.prepared.identity.privateKey}, {timeoutMs: 30_000})
        ssh.close()
        sshLoginMs = Date.now() - startedAt
        if (!quiet) ux.action.stop(`${sshLoginMs} ms`)
      } catch (error) {
        if (!quiet) ux.action.stop('failed; ending the session')
        const {tearDown} = await import('../apply/tear-down.js')
        await tearDown([session.name], {uid: ctx.owner.uid, isRoot: ctx.isRoot, bootId: ctx.bootId}, {gpu: ctx.gpu, stateDir: ctx.stateDir.dir}).catch(() => undefined)
        throw error
      }
    }
    if (c.sshPort === null) await this.awaitEntrypoint(c.id, c.user, session.name, ctx)
    return {
      id: c.id,
      name: c.name,
      image: c.image,
      sshPort: c.sshPort,
      sshHost: c.sshHost,
      user: c.user,
      workspace: c.workspace,
      keyPath,
      builtImage: container.prepared.built !== null,
      sshLoginMs,
      connect: connectHints(c, keyPath),
    }
  }

  /** Without sshd there is no login to wait for: wait until the entrypoint has made the user, so exec works at once. */
  private async awaitEntrypoint(id: string, user: string, name: string, ctx: Awaited<ReturnType<typeof import('./support/apply-context.js').applyContext>>): Promise<void> {
    const [{DockerRuntime}, {ContainerError}] = await Promise.all([import('../container/runtime.js'), import('../core/errors.js')])
    const runtime = new DockerRuntime()
    const deadline = Date.now() + 30_000
    while (Date.now() < deadline) {
      const probe = await runtime.exec(id, ['test', '-f', `/etc/gpu-cosplay/permit-user-environment`]).catch(() => null)
      const who = probe?.exitCode === 0 ? await runtime.exec(id, ['id', '-u', user]).catch(() => null) : null
      if (who?.exitCode === 0) return
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    const {tearDown} = await import('../apply/tear-down.js')
    await tearDown([name], {uid: ctx.owner.uid, isRoot: ctx.isRoot, bootId: ctx.bootId}, {gpu: ctx.gpu, stateDir: ctx.stateDir.dir}).catch(() => undefined)
    throw new ContainerError('CONTAINER_NOT_READY', `the entrypoint of ${name} did not create user ${user} within 30 s`, {fix: [`look at its log: docker logs gpu-cosplay-${name}`]})
  }
}

type UpFlags = {image?: string; workspace?: string; volume: string[]; env: string[]; 'ssh-port'?: number; 'ssh-bind': string; 'shm-size': string}

export function renderUp(r: UpResult): string {
  const slice = r.mig ? `MIG ${r.mig.profile} (GI ${r.mig.gpuInstanceId}, CI ${r.mig.computeInstanceId}) ${r.mig.uuid}` : 'whole GPU'
  const lines = [
    `Session ${r.name}: ${r.target.name} on GPU ${r.hostGpu.index}`,
    `  slice:  ${slice}`,
    `  clock:  ${r.clockMHz === null ? 'unlocked' : `${r.clockMHz} MHz`}   power: ${r.powerLimitW} W   VRAM cap: ${r.vramCapGB} GiB`,
    '',
    ...(r.container ? renderContainer(r.container) : ['For your own workload (the costume hooks read these):', ...Object.entries(r.env).map(([k, v]) => `  export ${k}=${shellQuote(v)}`)]),
    '',
    `End it with: gpu-cosplay down ${r.name}`,
  ]
  for (const w of r.warnings) lines.push(`! ${w}`)
  for (const n of r.notes) lines.push(`note: ${n}`)
  return lines.join('\n')
}

function renderContainer(c: UpContainer): string[] {
  const lines = [`Container ${c.name} (${c.image}), /workspace = ${c.workspace ?? '-'}`, '', 'Connect:', `  ${c.connect.command}`]
  if (c.connect.ssh) lines.push(`  ${c.connect.ssh}`)
  else lines.push('  (the image has no sshd: gpu-cosplay ssh and exec go through docker exec)')
  if (c.connect.sshConfig) lines.push('', 'For VS Code Remote-SSH, add to ~/.ssh/config (or: gpu-cosplay ssh-config NAME >> ~/.ssh/config):', ...c.connect.sshConfig.split('\n').map((l) => `  ${l}`))
  return lines
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]*$/.test(value) && value !== '' ? value : `'${value.replace(/'/g, `'\\''`)}'`
}
