import {Flags, ux} from '@oclif/core'

import type {ResetResult} from '../apply/reset-gpu.js'
import {InputError, StateError} from '../core/errors.js'
import {requireRootOnSharedBox} from '../core/invoking-user.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostGpuFlag} from '../shell/host-flag.js'

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
    requireRootOnSharedBox('reset', "ends every user's sessions on a GPU")
    if (!flags.yes) {
      throw new InputError('CONFIRMATION_REQUIRED', `reset ends every session on GPU ${flags['host-gpu']} and restores its settings`, {
        fix: [`see what would end: gpu-cosplay status`, `then: gpu-cosplay reset --host-gpu ${flags['host-gpu']} --yes`],
      })
    }
    const [{applyContext}, {resetGpu}] = await Promise.all([import('../client/apply-context.js'), import('../apply/reset-gpu.js')])
    const ctx = await applyContext({mutates: true})
    if (!ctx.isRoot) {
      throw new StateError('ROOT_ONLY', `reset ends every user's sessions on GPU ${flags['host-gpu']}: only root may run it`, {
        exit: 4,
        fix: ['end your own sessions: gpu-cosplay down --all', `ask an admin: sudo gpu-cosplay reset --host-gpu ${flags['host-gpu']} --yes`],
      })
    }
    if (!this.jsonEnabled()) ux.action.start(`Resetting GPU ${flags['host-gpu']}`)
    const result = await resetGpu(flags['host-gpu'], ctx.deps).catch((error: unknown) => {
      if (!this.jsonEnabled()) ux.action.stop('failed')
      throw error
    })
    if (!this.jsonEnabled()) {
      ux.action.stop('done')
      const how = result.mode === 'journal' ? 'from the journal' : 'to driver defaults (no usable record)'
      this.log(
        [`GPU ${result.gpuIndex} restored ${how}; ended: ${result.endedSessions.join(', ') || 'none'}`, ...result.notes.map((n) => `note: ${n}`)].join('\n'),
      )
    }
    return result
  }
}
