import {writeFile} from 'node:fs/promises'

import {Args, Flags} from '@oclif/core'

import {resolveTarget} from '../catalog/resolve-target.js'
import {defaultImageTag} from '../container/cosplay-image.js'
import {InputError} from '../core/errors.js'
import {EXPORT_FORMATS, type ExportFormat, MIG_STRATEGIES, type MigStrategy} from '../export/export-input.js'
import {type Achievable, achievableFor} from '../plan/achievable-for.js'
import {OBJECTIVES, type Plan as CosplayPlan} from '../plan/types.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'
import {currentCatalog, localSmi} from '../client/context.js'
import {fixed, formatTable} from './support/format-table.js'
import {planFor} from '../client/plan-for.js'

/** `achievable`: the plan's figures as this host really delivers them (calibrate), next to the peaks */
export type PlanResult = CosplayPlan & {achievable: Achievable}

export default class Plan extends BaseCommand {
  static summary = 'Show how this host would imitate a GPU, without changing anything'
  static description = `Chooses a MIG profile, a clock lock and a power cap so that FP32, BF16 tensor throughput, memory bandwidth and VRAM come as close to the target as the hardware allows, and says where they cannot. Reads the GPU with nvidia-smi (at most 3 calls); --on plans against a built-in host model and needs no GPU. Changes nothing.`
  static examples = [
    '<%= config.bin %> plan 3090 --on h200',
    '<%= config.bin %> plan t4 --host-gpu 2 --match fp32',
    '<%= config.bin %> plan 4090 --on h100-sxm --json',
    '<%= config.bin %> plan 3090 --on h200 -o k8s --out cosplay.yaml',
    '<%= config.bin %> plan 3090 --on h200 -o mig-parted --mix 3090x2,t4x3',
  ]
  static args = {gpu: Args.string({required: true, description: 'target GPU, e.g. 3090, t4, a100-80g'})}
  static flags = {
    'host-gpu': Flags.integer({description: 'index of the host GPU to plan for (default 0)', min: 0, exclusive: ['on']}),
    on: Flags.string({description: 'plan against a built-in host model (h200, h100-sxm, a100-80g, a30, l40s...)', exclusive: ['host-gpu']}),
    match: Flags.string({description: 'what to match most closely', options: [...OBJECTIVES], default: 'balanced'}),
    strict: Flags.boolean({description: 'as up --strict: refuse instead of sharing a clock or power limit another session holds'}),
    'lock-clock': Flags.boolean({description: 'as up --lock-clock: lock the GPU-wide clock even on a slice'}),
    'cap-power': Flags.boolean({description: "as up --cap-power: cap the GPU-wide power at the target's TDP even on a slice"}),
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
    const catalog = await currentCatalog()
    const target = resolveTarget(catalog, args.gpu)
    const request = {
      on: flags.on,
      hostGpu: flags['host-gpu'],
      objective: flags.match as CosplayPlan['objective'],
      strict: flags.strict,
      lockClock: flags['lock-clock'],
      capPower: flags['cap-power'],
      // A cluster runs no per-session MPS daemon of ours: exports shape with MIG and GPU-wide leases.
      ...(flags.output ? {mpsAvailable: false} : {}),
    }
    const {plan: cosplay, host, probe} = await planFor(catalog, target, request, () => localSmi())
    // a model (--on) has no calibration; reading one loads zod, which `plan --on` must not pay for at start-up
    const calibration = probe === null ? {status: 'model' as const} : (await import('../client/plan-calibration.js')).planCalibration(host.model.key, probe)
    const plan: PlanResult = {...cosplay, achievable: achievableFor(cosplay, calibration, target.achievedFraction)}
    if (flags.output) {
      // js-yaml and the renderers load only for -o: plain `plan` stays at oclif's start-up cost.
      const {exportPlan} = await import('../export/export-plan.js')
      const text = exportPlan(catalog, host, target, plan, {
        format: flags.output as ExportFormat,
        mix: flags.mix,
        migStrategy: flags['mig-strategy'] as MigStrategy | undefined,
        label: flags.label,
        image: flags.image ?? defaultImageTag(this.config.version),
        leaseImage: flags['lease-image'],
        nodeName: flags.node,
      })
      if (flags.out) await writeFile(flags.out, text)
      else if (this.jsonEnabled())
        throw new InputError('OUTPUT_NEEDS_FILE', `-o ${flags.output} and --json both write to stdout`, {fix: ['write the export with --out FILE']})
      else process.stdout.write(text)
    } else if (!this.jsonEnabled()) this.log(renderPlan(plan))
    return plan
  }
}

const AXIS_NAMES = {fp32: 'FP32', bf16: 'BF16 tensor', 'fp16-tensor': 'FP16 tensor', bandwidth: 'bandwidth'} as const

export function renderPlan(plan: PlanResult): string {
  const where = plan.host.index === null ? `${plan.host.name} (model ${plan.host.model}, assumed idle)` : `GPU ${plan.host.index}: ${plan.host.name}`
  const slice = plan.mig
    ? `MIG ${plan.mig.profile} (profile ${plan.mig.profileId}, ${plan.mig.smCount} SMs, ${plan.mig.memoryGiB} GiB)`
    : `whole GPU (${plan.smCount} SMs)`
  const pct = (v: number | null) => (v === null ? '-' : `${v > 0 ? '+' : ''}${v.toFixed(1)}%`)
  const a = plan.achievable
  // ERROR: peak vs the target's datasheet (what the planner matched). Where the catalog has the target's
  // achieved figure and this host is calibrated, ACHIEVED ERROR compares achievable with it: like with like.
  const alike = a.targetAchieved.length > 0
  const row = (
    label: string,
    peak: number | null,
    achievable: number | null,
    target: number | null,
    error: number | null,
    achieved: [number | null, number | null],
    digits = 1,
  ) => [
    label,
    fixed(peak, digits),
    fixed(achievable, digits),
    fixed(target, digits),
    pct(error),
    ...(alike ? [fixed(achieved[0], digits), pct(achieved[1])] : []),
  ]
  const achievedTarget = (axis: 'fp32' | 'bf16' | 'bandwidth', figure: number | null, error: number | null): [number | null, number | null] =>
    a.targetAchieved.includes(axis) ? [figure, error] : [null, null]
  const rows = [
    row(
      'FP32 TFLOPS',
      plan.expected.fp32Tflops,
      a.expected.fp32Tflops,
      plan.target.fp32Tflops,
      plan.errors.fp32Pct,
      achievedTarget('fp32', a.target.fp32Tflops, a.errors.fp32Pct),
    ),
    row(
      'BF16 tensor TFLOPS',
      plan.expected.bf16Tflops,
      a.expected.bf16Tflops,
      plan.target.bf16Tflops,
      plan.errors.bf16Pct,
      achievedTarget('bf16', a.target.bf16Tflops, a.errors.bf16Pct),
    ),
    row(
      'Bandwidth GB/s',
      plan.expected.bandwidthGBs,
      a.expected.bandwidthGBs,
      plan.target.bandwidthGBs,
      plan.errors.bandwidthPct,
      achievedTarget('bandwidth', a.target.bandwidthGBs, a.errors.bandwidthPct),
      0,
    ),
    // the VRAM cap is exact: nothing to calibrate
    row('VRAM GiB', plan.expected.vramGB, plan.expected.vramGB, plan.target.vramGB, plan.errors.vramPct, [null, null]),
  ]
  // A target without BF16 is matched on its FP16 tensor figure: show that axis too, so the trade is visible.
  const fp16 = plan.weighed.find((w) => w.axis === 'fp16-tensor')
  if (fp16) rows.splice(2, 0, row('FP16 tensor TFLOPS', fp16.expected, null, fp16.target, fp16.errorPct, [null, null]))
  const lines = [
    `${plan.target.name} on ${where}, matching ${plan.objective}`,
    `  slice:  ${slice}${plan.needsMigEnable ? ' (MIG mode must be turned on)' : ''}`,
    `  clock:  ${plan.clockMHz === null ? `unlocked (max ${plan.effectiveClockMHz} MHz)` : `locked at ${plan.clockMHz} MHz`}`,
    `  power:  ${plan.powerLimitW === null ? 'left as found' : `${plan.powerLimitW} W`} (GPU-wide)`,
    `  MPS:    ${plan.mps ? `${plan.mps.activeThreadPercentage}% active threads = ${plan.mps.smCount} of ${plan.mig?.smCount ?? plan.smCount} SMs, ${plan.mps.pinnedMemLimitMiB} MiB pinned (cap ${plan.vramCapMiB} + ${plan.mps.pinnedMemLimitMiB - plan.vramCapMiB} MiB for the context and library buffers)` : 'not available here: GPU-wide knobs shape the session'}`,
    `  GPU-wide: ${plan.gpuWide.reason}`,
    `  weighs: ${plan.weighed.map((w) => `${AXIS_NAMES[w.axis]} ${w.errorPct > 0 ? '+' : ''}${w.errorPct.toFixed(1)}%`).join(', ')} (--match ${plan.objective})`,
    `  VRAM:   capped at ${plan.vramCapGiB} GiB (${plan.vramCapMiB} MiB)`,
    '',
    formatTable(['AXIS', 'PEAK', 'ACHIEVABLE', 'TARGET', 'ERROR', ...(alike ? ['TARGET ACHIEVED', 'ACHIEVED ERROR'] : [])], rows),
    '',
    `  expectation: ${a.basis === 'calibrated' ? 'achievable (calibrated)' : 'peak'}; ${a.note}`,
  ]
  if (plan.warnings.length > 0) lines.push('', ...plan.warnings.map((w) => `! ${w}`))
  return lines.join('\n')
}
