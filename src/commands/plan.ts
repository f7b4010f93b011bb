import {writeFile} from 'node:fs/promises'

import {Args, Flags} from '@oclif/core'

import {type PlanResult, planTarget} from '../client/plan-for.js'
import {defaultImageTag} from '../container/cosplay-image.js'
import {InputError} from '../core/errors.js'
import {EXPORT_FORMATS, type ExportFormat, MIG_STRATEGIES, type MigStrategy} from '../export/export-input.js'
import {COUNT_MAX} from '../core/names.js'
import {OBJECTIVES} from '../plan/types.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'
import {renderPlan} from '../render/render-plan.js'

export default class Plan extends BaseCommand {
  static summary = 'Show how this host would imitate a GPU, without changing anything'
  static description = `Chooses a MIG profile, a clock lock and a power cap so that FP32, BF16 tensor throughput, memory bandwidth and VRAM come as close to the target as the hardware allows, and says where they cannot. Reads the GPU with nvidia-smi (at most 3 calls); --on plans against a built-in host model and needs no GPU. Changes nothing.`
  static examples = [
    '<%= config.bin %> plan 3090 --on h200',
    '<%= config.bin %> plan t4 --host-gpu 2 --match fp32',
    '<%= config.bin %> plan 4090 --on h100-sxm --json',
    '<%= config.bin %> plan 3090 --on h200 -o k8s --out cosplay.yaml',
    '<%= config.bin %> plan 3090 --on h200 -o mig-parted --mix 3090x2,t4x3',
    '<%= config.bin %> plan 3090 --on h200 --count 2',
  ]
  static args = {gpu: Args.string({required: true, description: 'target GPU, e.g. 3090, t4, a100-80g'})}
  static flags = {
    'host-gpu': Flags.integer({description: 'index of the host GPU to plan for (default 0)', min: 0, exclusive: ['on']}),
    on: Flags.string({description: 'plan against a built-in host model (h200, h100-sxm, a100-80g, a30, l40s...)', exclusive: ['host-gpu']}),
    match: Flags.string({description: 'what to match most closely', options: [...OBJECTIVES], default: 'balanced'}),
    strict: Flags.boolean({description: 'as up --strict: refuse instead of sharing a clock or power limit another session holds'}),
    'lock-clock': Flags.boolean({description: 'as up --lock-clock: lock the GPU-wide clock even on a slice'}),
    'cap-power': Flags.boolean({description: "as up --cap-power: cap the GPU-wide power at the target's TDP even on a slice"}),
    'no-mps': Flags.boolean({description: 'as up --no-mps: plan without MPS, as on a host without the MPS control binary'}),
    datasheet: Flags.boolean({description: "match datasheet peaks against the target's datasheet, as before measured references"}),
    count: Flags.integer({
      description: 'as up --count: N devices of the target in one session (their own slices, on one GPU where they fit, else spread), and what joins them',
      min: 1,
      max: COUNT_MAX,
      exclusive: ['output'],
    }),
    output: Flags.string({
      char: 'o',
      description: 'render the plan for a cluster instead: a mig-parted layout, Kubernetes manifests or Slurm config',
      options: [...EXPORT_FORMATS],
    }),
    out: Flags.string({description: 'write the -o output to this file instead of stdout', dependsOn: ['output']}),
    mix: Flags.string({
      description: 'with -o mig-parted: pack several targets onto one GPU, e.g. 3090x2,t4x3 (the GPU argument counts once unless named)',
      dependsOn: ['output'],
    }),
    'mig-strategy': Flags.string({
      description: "with -o k8s: the device plugin's MIG strategy (default mixed)",
      options: [...MIG_STRATEGIES],
      dependsOn: ['output'],
    }),
    label: Flags.string({
      description: "with -o: the layout's name (mig-parted config, nvidia.com/mig.config label); default gpu-cosplay-<target>",
      dependsOn: ['output'],
    }),
    image: Flags.string({description: 'with -o k8s: the cosplay image (default gpu-cosplay:<version>)', dependsOn: ['output']}),
    'lease-image': Flags.string({description: 'with -o k8s: image with the gpu-cosplay CLI for the lease DaemonSet (default: --image)', dependsOn: ['output']}),
    ...hostFlag,
    node: Flags.string({description: 'with -o slurm: the NodeName (hostlist) the Gres line is for (default gpu-node)', dependsOn: ['output']}),
  }

  async run(): Promise<PlanResult> {
    const {args, flags} = await this.parse(Plan)
    const remote = await this.forwardToHost(flags.host, renderPlan)
    if (remote) return remote.result
    const request = {
      on: flags.on,
      hostGpu: flags['host-gpu'],
      objective: flags.match as PlanResult['objective'],
      strict: flags.strict,
      lockClock: flags['lock-clock'],
      capPower: flags['cap-power'],
      ...(flags['no-mps'] ? {mpsAvailable: false} : {}),
      ...(flags.datasheet ? {basis: 'datasheet' as const} : {}),
      ...(flags.count && flags.count > 1 ? {count: flags.count} : {}),
    }
    const exportAs = flags.output
      ? {
          format: flags.output as ExportFormat,
          mix: flags.mix,
          migStrategy: flags['mig-strategy'] as MigStrategy | undefined,
          label: flags.label,
          image: flags.image ?? defaultImageTag(this.config.version),
          leaseImage: flags['lease-image'],
          nodeName: flags.node,
        }
      : undefined
    const {plan, exported} = await planTarget(await this.callContext(), args.gpu, request, exportAs)
    if (exported === null) {
      if (!this.jsonEnabled()) this.log(renderPlan(plan))
    } else if (flags.out) await writeFile(flags.out, exported)
    else if (this.jsonEnabled())
      throw new InputError('OUTPUT_NEEDS_FILE', `-o ${flags.output} and --json both write to stdout`, {fix: ['write the export with --out FILE']})
    else process.stdout.write(exported)
    return plan
  }
}
