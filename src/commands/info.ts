import {Args} from '@oclif/core'

import {resolveTarget} from '../catalog/resolve-target.js'
import type {Target} from '../catalog/types.js'
import {BaseCommand} from '../shell/base-command.js'
import {currentCatalog} from '../client/context.js'
import {renderInfo} from '../render/render-info.js'

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
