import {Args, Flags} from '@oclif/core'

import {resolveTarget} from '../catalog/resolve-target.js'
import {planCosplay} from '../plan/plan-cosplay.js'
import {OBJECTIVES, type Plan as CosplayPlan} from '../plan/types.js'
import {BaseCommand} from './support/base-command.js'
import {currentCatalog, localSmi} from './support/context.js'
import {fixed, formatTable} from './support/format-table.js'
import {resolvePlanHost} from './support/resolve-plan-host.js'

export type PlanResult = CosplayPlan

export default class Plan extends BaseCommand {
  static summary = 'Show how this host would imitate a GPU, without changing anything'
  static description = `Chooses a MIG profile, a clock lock and a power cap so that FP32, BF16 tensor throughput, memory bandwidth and VRAM come as close to the target as the hardware allows, and says where they cannot. Reads the GPU with nvidia-smi (at most 3 calls); --on plans against a built-in host model and needs no GPU. Changes nothing.`
  static examples = [
    '<%= config.bin %> plan 3090 --on h200',
    '<%= config.bin %> plan t4 --host-gpu 2 --match fp32',
    '<%= config.bin %> plan 4090 --on h100-sxm --json',
  ]
  static args = {gpu: Args.string({required: true, description: 'target GPU, e.g. 3090, t4, a100-80g'})}
  static flags = {
    'host-gpu': Flags.integer({description: 'index of the host GPU to plan for (default 0)', min: 0, exclusive: ['on']}),
    on: Flags.string({description: 'plan against a built-in host model (h200, h100-sxm, a100-80g, a30, l40s...)', exclusive: ['host-gpu']}),
    match: Flags.string({description: 'what to match most closely', options: [...OBJECTIVES], default: 'balanced'}),
  }

  async run(): Promise<PlanResult> {
    const {args, flags} = await this.parse(Plan)
    const catalog = await currentCatalog()
    const target = resolveTarget(catalog, args.gpu)
    const {host} = await resolvePlanHost(catalog, {on: flags.on, hostGpu: flags['host-gpu']}, () => localSmi())
    const plan = planCosplay(target, host, flags.match as CosplayPlan['objective'])
    if (!this.jsonEnabled()) this.log(renderPlan(plan))
    return plan
  }
}

export function renderPlan(plan: CosplayPlan): string {
  const where = plan.host.index === null ? `${plan.host.name} (model ${plan.host.model}, assumed idle)` : `GPU ${plan.host.index}: ${plan.host.name}`
  const slice = plan.mig
    ? `MIG ${plan.mig.profile} (profile ${plan.mig.profileId}, ${plan.mig.smCount} SMs, ${plan.mig.memoryGiB} GiB)`
    : `whole GPU (${plan.smCount} SMs)`
  const pct = (v: number | null) => (v === null ? '-' : `${v > 0 ? '+' : ''}${v.toFixed(1)}%`)
  const rows = [
    ['FP32 TFLOPS', fixed(plan.expected.fp32Tflops), fixed(plan.target.fp32Tflops), pct(plan.errors.fp32Pct)],
    ['BF16 tensor TFLOPS', fixed(plan.expected.bf16Tflops), fixed(plan.target.bf16Tflops), pct(plan.errors.bf16Pct)],
    ['Bandwidth GB/s', fixed(plan.expected.bandwidthGBs, 0), fixed(plan.target.bandwidthGBs, 0), pct(plan.errors.bandwidthPct)],
    ['VRAM GiB', fixed(plan.expected.vramGB), fixed(plan.target.vramGB), pct(plan.errors.vramPct)],
  ]
  const lines = [
    `${plan.target.name} on ${where}, matching ${plan.objective}`,
    `  slice:  ${slice}${plan.needsMigEnable ? ' (MIG mode must be turned on)' : ''}`,
    `  clock:  ${plan.clockMHz === null ? `unlocked (max ${plan.effectiveClockMHz} MHz)` : `locked at ${plan.clockMHz} MHz`}`,
    `  power:  ${plan.powerLimitW} W (GPU-wide)`,
    `  VRAM:   capped at ${plan.vramCapGB} GiB (${plan.vramCapMiB} MiB)`,
    '',
    formatTable(['AXIS', 'EXPECTED', 'TARGET', 'ERROR'], rows),
  ]
  if (plan.warnings.length > 0) lines.push('', ...plan.warnings.map((w) => `! ${w}`))
  return lines.join('\n')
}
