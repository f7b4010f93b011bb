import type {DoctorResult} from '../client/doctor-checks.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'
import {renderDoctor} from '../render/render-doctor.js'

export default class Doctor extends BaseCommand {
  static summary = 'Check that this host has what gpu-cosplay needs'
  static description = `Checks nvidia-smi and the driver, each GPU (MIG mode and free slices, power and clock ranges), the Docker engine, the NVIDIA container runtime, and whether nvidia-smi can change settings (root or passwordless sudo). Reads only (at most 3 nvidia-smi calls); changes nothing. Exits 1 when something required is missing.`
  static examples = ['<%= config.bin %> doctor', '<%= config.bin %> doctor --json | jq ".checks[] | select(.status != \\"ok\\")"']

  static flags = {...hostFlag}

  async run(): Promise<DoctorResult> {
    const {flags} = await this.parse(Doctor)
    const remote = await this.forwardToHost(flags.host, renderDoctor)
    if (remote) return remote.result
    const result = await (await import('../engine/perform.js')).perform({op: 'doctor'}, {progress: null}, this.config.version)
    if (!this.jsonEnabled()) this.log(renderDoctor(result))
    if (!result.ok) process.exitCode = 1
    return result
  }
}
