import type {BoxStatus} from '../../system/box-status.js'
import {BaseCommand} from '../../shell/base-command.js'
import {renderSystemStatus} from '../../render/render-system.js'

export type SystemStatusResult = BoxStatus

export default class SystemStatus extends BaseCommand {
  static summary = 'Show what system install set up on this box, and whether it still holds'
  static description = `Checks the configuration (/etc/gpu-cosplay/config.yaml), the group, the engine's entry point and its sudoers rule (visudo), the state directory, and that root alone can change nvidia-smi, the MPS control program and the gpu-cosplay package the engine runs. Run as root for every check; as a member it also says whether you are in the group. Reads only. Exits 1 when an installation is broken.`
  static examples = ['<%= config.bin %> system status', '<%= config.bin %> system status --json']

  async run(): Promise<SystemStatusResult> {
    await this.parse(SystemStatus)
    const [{boxStatus}, {LocalExecutor}] = await Promise.all([import('../../system/box-status.js'), import('../../core/local-executor.js')])
    const result = await boxStatus(new LocalExecutor())
    if (result.installed && !result.healthy) process.exitCode = 1
    if (!this.jsonEnabled()) this.log(renderSystemStatus(result))
    return result
  }
}
