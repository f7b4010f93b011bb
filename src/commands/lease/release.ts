import {Flags} from '@oclif/core'

import type {ReleaseOutcome} from '../../client/gpu-lease.js'
import {requireRootOnSharedBox} from '../../core/call-context.js'
import {BaseCommand} from '../../shell/base-command.js'
import {hostFlag, hostGpuFlag} from '../../shell/host-flag.js'
import {renderRelease} from '../../render/render-lease.js'

export type LeaseReleaseResult = ReleaseOutcome

export default class LeaseRelease extends BaseCommand {
  static summary = "Drop a holder's GPU-wide lease; the last holder restores the values found before the first"
  static description = `Ends what \`lease hold\` took for HOLDER on that GPU. A setting somebody else still holds (another holder, or an \`up\` session) stays as it is; one nobody holds any more goes back to the value read before the first holder changed it (the power limit as found; the clock unlocked).

Releasing a holder that holds nothing says so and exits 0, so an Epilog or a preStop hook can always call it.`
  static examples = [
    '<%= config.bin %> lease release --host-gpu 0 --holder slurm-job-42',
    '<%= config.bin %> lease release --host-gpu 0 --holder k8s-gpu-cosplay-lease-3090 --json',
  ]
  static flags = {
    ...hostGpuFlag,
    holder: Flags.string({description: 'the name lease hold was given', required: true}),
    ...hostFlag,
  }

  async run(): Promise<LeaseReleaseResult> {
    const {flags} = await this.parse(LeaseRelease)
    const remote = await this.forwardToHost(flags.host, renderRelease)
    if (remote) return remote.result
    const call = await this.callContext()
    requireRootOnSharedBox(call, 'lease release', "puts back the clock and power limit of every tenant's GPU")
    const {releaseGpuLease} = await import('../../client/gpu-lease.js')
    const result = await releaseGpuLease(call, {hostGpu: flags['host-gpu'], holder: flags.holder})
    if (!this.jsonEnabled()) this.log(renderRelease(result))
    return result
  }
}
