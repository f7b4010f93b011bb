import {Flags} from '@oclif/core'

import {type Arch, ARCHS, type Target} from '../catalog/types.js'
import {BaseCommand} from '../shell/base-command.js'
import {currentCatalog} from '../client/context.js'
import {renderLs} from '../render/render-ls.js'

export type LsResult = Target[]

export default class Ls extends BaseCommand {
  static summary = 'List the GPUs this tool can imitate'
  static description = `Reads the built-in catalog and any files in $XDG_CONFIG_HOME/gpu-cosplay/catalog.d/ (or $GPU_COSPLAY_CATALOG_DIR). Throughput is dense (no sparsity); tensor figures are BF16 with FP32 accumulate, "-" where the card has no BF16. Touches nothing on the host.`
  static examples = ['<%= config.bin %> ls', '<%= config.bin %> ls --arch ada', '<%= config.bin %> ls --json | jq ".[].key"']
  static flags = {
    // not `options`: oclif matches those case-sensitively, and people write Ada and Hopper
    arch: Flags.string({
      description: 'only this architecture (any case)',
      helpValue: ARCHS.join('|'),
      parse: async (input) => archOf(input),
    }),
  }

  async run(): Promise<LsResult> {
    const {flags} = await this.parse(Ls)
    const targets = (await currentCatalog()).targets.filter((t) => !flags.arch || t.arch === flags.arch)
    if (!this.jsonEnabled()) this.log(renderLs(targets))
    return [...targets]
  }
}

function archOf(input: string): Arch {
  const arch = ARCHS.find((a) => a === input.trim().toLowerCase())
  // exit 2 marks it as a usage error, reported like oclif's own option check
  if (arch === undefined) throw Object.assign(new Error(`Expected --arch=${input} to be one of: ${ARCHS.join(', ')}`), {oclif: {exit: 2}})
  return arch
}
