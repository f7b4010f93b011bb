import {Flags, ux} from '@oclif/core'

import type {ResetResult} from '../client/force-reset.js'
import {InputError} from '../core/errors.js'
import {requireRootOnSharedBox} from '../core/call-context.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostGpuFlag} from '../shell/host-flag.js'
import {renderReset} from '../render/render-reset.js'

export type ResetCommandResult = ResetResult

export default class Reset extends BaseCommand {
  static summary = 'Force one GPU back to the recorded originals, or to driver defaults when no record survives'
  static description = `For the day state is lost: ends every gpu-cosplay session on the GPU (all users'), undoing their journals, and restores the GPU-wide settings recorded before the first session.

With no usable record (none, or a damaged journal, which is moved aside), clocks are reset (-rgc) and the power limit set to the driver default; MIG instances no record proves are gpu-cosplay's are listed, never destroyed. Needs --yes.`
  static examples = ['<%= config.bin %> reset --host-gpu 0 --yes']
  static flags = {
    ...hostGpuFlag,
    yes: Flags.boolean({description: 'really do it'}),
  }

  async run(): Promise<ResetCommandResult> {
    const {flags} = await this.parse(Reset)
    const call = await this.callContext()
    requireRootOnSharedBox(call, 'reset', "ends every user's sessions on a GPU")
    if (!flags.yes) {
      throw new InputError('CONFIRMATION_REQUIRED', `reset ends every session on GPU ${flags['host-gpu']} and restores its settings`, {
        fix: [`see what would end: gpu-cosplay status`, `then: gpu-cosplay reset --host-gpu ${flags['host-gpu']} --yes`],
      })
    }
    const {forceReset} = await import('../client/force-reset.js')
    const spinner = this.jsonEnabled() ? null : {start: (a: string) => ux.action.start(a), stop: (o: string) => ux.action.stop(o)}
    const result = await forceReset(call, flags['host-gpu'], spinner)
    if (!this.jsonEnabled()) this.log(renderReset(result))
    return result
  }
}
