import {Flags} from '@oclif/core'

import {InputError} from '../../core/errors.js'
import type {UninstallResult} from '../../system/box-install.js'
import {BaseCommand} from '../../shell/base-command.js'

export type SystemUninstallResult = UninstallResult

export default class SystemUninstall extends BaseCommand {
  static summary = 'Remove what system install set up (refused while sessions are up)'
  static description = `Removes the sudoers rule first (from then on nobody reaches the engine), then the entry point and /etc/gpu-cosplay. Keeps the group and the state directory (journals, calibrations). Refused while any session or lease hold is up: end them first. Root only; needs --yes.`
  static examples = ['<%= config.bin %> system uninstall --yes']
  static flags = {yes: Flags.boolean({description: 'really do it'})}

  async run(): Promise<SystemUninstallResult> {
    const {flags} = await this.parse(SystemUninstall)
    if (!flags.yes)
      throw new InputError('CONFIRMATION_REQUIRED', 'system uninstall removes the engine and its sudoers rule', {
        fix: ['sudo gpu-cosplay system uninstall --yes'],
      })
    const {uninstallBox} = await import('../../system/box-install.js')
    const result = await uninstallBox()
    if (!this.jsonEnabled()) this.log([`removed: ${result.removed.join(', ') || 'nothing'}`, `kept: ${result.kept.join(', ')}`].join('\n'))
    return result
  }
}
