import {Args, Flags, ux} from '@oclif/core'

import {resolveTarget} from '../catalog/resolve-target.js'
import {InputError} from '../core/errors.js'
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
}

export default class Up extends BaseCommand {
  static summary = 'Dress a host GPU up as another GPU: MIG slice, clock lock, power cap, VRAM cap'
  static description = `Plans like \`plan\`, then applies it as a journaled session: turns MIG mode on if needed (and records
that it did), creates one GPU instance and one compute instance, and takes shares ("leases") of the GPU-wide
settings: persistence mode, clock lock, power limit. Other sessions on the same GPU keep theirs; a session that
wants a different clock or power limit shares the one in force (the plan is recomputed with it), or fails with --strict.
Every change is written to the state directory before it is made; Ctrl-C finishes the current step and undoes
the rest, and \`gpu-cosplay recover\` finishes the job after a crash. \`down\` puts everything back.
With --no-container it stops after the GPU part and prints what your own workload needs.`
  static examples = [
    '<%= config.bin %> up 3090 --no-container',
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
  }

  async run(): Promise<UpResult> {
    const {args, flags} = await this.parse(Up)
    const target = resolveTarget(await currentCatalog(), args.gpu)
    if (!flags['no-container']) {
      throw new InputError('CONTAINER_NOT_AVAILABLE', 'this build starts no container yet; pass --no-container', {fix: ['gpu-cosplay up 3090 --no-container']})
    }
    const [{applyContext, cancelOnSignals}, {bringUp}, {costumeEnv}] = await Promise.all([
      import('./support/apply-context.js'),
      import('../apply/bring-up.js'),
      import('../plan/costume-env.js'),
    ])
    const ctx = await applyContext({mutates: true})
    const quiet = this.jsonEnabled()
    const say = (message: string) => (quiet ? undefined : this.logToStderr(message))
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
      }
      if (!quiet) this.log(renderUp(result))
      return result
    } catch (error) {
      if (!quiet) ux.action.stop('failed')
      throw error
    } finally {
      cancel.dispose()
    }
  }
}

export function renderUp(r: UpResult): string {
  const slice = r.mig ? `MIG ${r.mig.profile} (GI ${r.mig.gpuInstanceId}, CI ${r.mig.computeInstanceId}) ${r.mig.uuid}` : 'whole GPU'
  const lines = [
    `Session ${r.name}: ${r.target.name} on GPU ${r.hostGpu.index}`,
    `  slice:  ${slice}`,
    `  clock:  ${r.clockMHz === null ? 'unlocked' : `${r.clockMHz} MHz`}   power: ${r.powerLimitW} W   VRAM cap: ${r.vramCapGB} GiB`,
    '',
    'For your own workload (the costume hooks read these):',
    ...Object.entries(r.env).map(([k, v]) => `  export ${k}=${shellQuote(v)}`),
    '',
    `End it with: gpu-cosplay down ${r.name}`,
  ]
  for (const w of r.warnings) lines.push(`! ${w}`)
  for (const n of r.notes) lines.push(`note: ${n}`)
  return lines.join('\n')
}

function shellQuote(value: string): string {
  return /^[\w@%+=:,./-]*$/.test(value) && value !== '' ? value : `'${value.replace(/'/g, `'\\''`)}'`
}
