import {Args} from '@oclif/core'

import {resolveTarget} from '../catalog/resolve-target.js'
import type {Target} from '../catalog/types.js'
import {BaseCommand} from '../shell/base-command.js'
import {currentCatalog} from '../client/context.js'

export type InfoResult = Target

export default class Info extends BaseCommand {
  static summary = 'Show the catalog entry of one GPU'
  static description = `Accepts forgiving names: 3090, rtx-3090, "RTX 3090", 3090ti. An unknown name lists the closest ones. Touches nothing on the host.`
  static examples = ['<%= config.bin %> info 3090', '<%= config.bin %> info "RTX 4060 Ti 16GB" --json']
  static args = {gpu: Args.string({required: true, description: 'GPU to show, e.g. 3090, t4, a100-80g'})}

  async run(): Promise<InfoResult> {
    const {args} = await this.parse(Info)
    const target = resolveTarget(await currentCatalog(), args.gpu)
    if (!this.jsonEnabled()) this.log(renderInfo(target))
    return target
  }
}

export function renderInfo(t: Target): string {
  const tf = (v: number | null) => (v === null ? 'none' : `${v} TFLOPS`)
  const lines: [string, string][] = [
    ['Name', `${t.name} (${t.key})`],
    ['Aliases', t.aliases.join(', ') || '-'],
    ['Architecture', `${t.arch} ${t.chip}, compute capability ${t.computeCapability}`],
    ['SMs / boost clock', `${t.smCount} SMs at ${t.boostClockMHz} MHz`],
    ['VRAM', `${t.vramGB} GB ${t.memoryType}, ${t.bandwidthGBs} GB/s${t.l2CacheMB === null ? '' : `, L2 ${t.l2CacheMB} MB`}`],
    ['FP32', tf(t.fp32Tflops)],
    ['BF16 tensor (FP32 acc.)', tf(t.bf16Tflops)],
    ['FP16 tensor (FP32 acc.)', tf(t.fp16Tflops)],
    ['TF32 tensor', tf(t.tf32Tflops)],
    ['FP8 tensor', tf(t.fp8Tflops)],
    ['TDP', `${t.tdpW} W`],
    ['Source', t.source],
  ]
  if (t.notes) lines.push(['Notes', t.notes])
  const width = Math.max(...lines.map(([k]) => k.length))
  return lines.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n')
}
