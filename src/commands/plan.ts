import {Args, Flags} from '@oclif/core'

import {resolveTarget} from '../catalog/resolve-target.js'
import {type Achievable, achievableFor} from '../plan/achievable-for.js'
import {planCosplay} from '../plan/plan-cosplay.js'
import {OBJECTIVES, type Plan as CosplayPlan} from '../plan/types.js'
import {BaseCommand} from './support/base-command.js'
import {currentCatalog, localSmi} from './support/context.js'
import {fixed, formatTable} from './support/format-table.js'
import {planCalibration} from './support/plan-calibration.js'
import {resolvePlanHost} from './support/resolve-plan-host.js'

/** `achievable`: the plan's figures as this host really delivers them (calibrate), next to the peaks */
export type PlanResult = CosplayPlan & {achievable: Achievable}

export default class Plan extends BaseCommand {
  static summary = 'Show how this host would imitate a GPU, without changing anything'
  static description = `Chooses a MIG profile, a clock lock and a power cap so that FP32, BF16 tensor throughput, memory bandwidth
and VRAM come as close to the target as the hardware allows, and says where they cannot.
Reads the GPU with nvidia-smi (at most 3 calls); --on plans against a built-in host model and needs no GPU.
Changes nothing.`
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
    const {host, probe} = await resolvePlanHost(catalog, {on: flags.on, hostGpu: flags['host-gpu']}, () => localSmi())
    const cosplay = planCosplay(target, host, flags.match as CosplayPlan['objective'])
    const plan: PlanResult = {...cosplay, achievable: achievableFor(cosplay, planCalibration(host.model.key, probe), target.achievedFraction)}
    if (!this.jsonEnabled()) this.log(renderPlan(plan))
    return plan
  }
}

export function renderPlan(plan: PlanResult): string {
  const where = plan.host.index === null ? `${plan.host.name} (model ${plan.host.model}, assumed idle)` : `GPU ${plan.host.index}: ${plan.host.name}`
  const slice = plan.mig ? `MIG ${plan.mig.profile} (profile ${plan.mig.profileId}, ${plan.mig.smCount} SMs, ${plan.mig.memoryGiB} GiB)` : `whole GPU (${plan.smCount} SMs)`
  const pct = (v: number | null) => (v === null ? '-' : `${v > 0 ? '+' : ''}${v.toFixed(1)}%`)
  const a = plan.achievable
  // ERROR: peak vs the target's datasheet (what the planner matched). Where the catalog has the target's
  // achieved figure and this host is calibrated, ACHIEVED ERROR compares achievable with it: like with like.
  const alike = a.targetAchieved.length > 0
  const row = (label: string, peak: number | null, achievable: number | null, target: number | null, error: number | null, achieved: [number | null, number | null], digits = 1) => [
    label, fixed(peak, digits), fixed(achievable, digits), fixed(target, digits), pct(error), ...(alike ? [fixed(achieved[0], digits), pct(achieved[1])] : []),
  ]
  const achievedTarget = (axis: 'fp32' | 'bf16' | 'bandwidth', figure: number | null, error: number | null): [number | null, number | null] =>
    a.targetAchieved.includes(axis) ? [figure, error] : [null, null]
  const rows = [
    row('FP32 TFLOPS', plan.expected.fp32Tflops, a.expected.fp32Tflops, plan.target.fp32Tflops, plan.errors.fp32Pct, achievedTarget('fp32', a.target.fp32Tflops, a.errors.fp32Pct)),
    row('BF16 tensor TFLOPS', plan.expected.bf16Tflops, a.expected.bf16Tflops, plan.target.bf16Tflops, plan.errors.bf16Pct, achievedTarget('bf16', a.target.bf16Tflops, a.errors.bf16Pct)),
    row('Bandwidth GB/s', plan.expected.bandwidthGBs, a.expected.bandwidthGBs, plan.target.bandwidthGBs, plan.errors.bandwidthPct, achievedTarget('bandwidth', a.target.bandwidthGBs, a.errors.bandwidthPct), 0),
    // the VRAM cap is exact: nothing to calibrate
    row('VRAM GiB', plan.expected.vramGB, plan.expected.vramGB, plan.target.vramGB, plan.errors.vramPct, [null, null]),
  ]
  const lines = [
    `${plan.target.name} on ${where}, matching ${plan.objective}`,
    `  slice:  ${slice}${plan.needsMigEnable ? ' (MIG mode must be turned on)' : ''}`,
    `  clock:  ${plan.clockMHz === null ? `unlocked (max ${plan.effectiveClockMHz} MHz)` : `locked at ${plan.clockMHz} MHz`}`,
    `  power:  ${plan.powerLimitW} W (GPU-wide)`,
    `  VRAM:   capped at ${plan.vramCapGB} GiB (${plan.vramCapMiB} MiB)`,
    '',
    formatTable(['AXIS', 'PEAK', 'ACHIEVABLE', 'TARGET', 'ERROR', ...(alike ? ['TARGET ACHIEVED', 'ACHIEVED ERROR'] : [])], rows),
    '',
    `  expectation: ${a.basis === 'calibrated' ? 'achievable (calibrated)' : 'peak'}; ${a.note}`,
  ]
  if (plan.warnings.length > 0) lines.push('', ...plan.warnings.map((w) => `! ${w}`))
  return lines.join('\n')
}
