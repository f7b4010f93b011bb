import {Flags} from '@oclif/core'

import type {HoldOutcome} from '../../client/gpu-lease.js'
import {InputError} from '../../core/errors.js'
import {requireRootOnSharedBox} from '../../core/call-context.js'
import {BaseCommand} from '../../shell/base-command.js'
import {hostFlag, hostGpuFlag} from '../../shell/host-flag.js'
import {renderHold} from '../../render/render-lease.js'

export type LeaseHoldResult = HoldOutcome

export default class LeaseHold extends BaseCommand {
  static summary = 'Hold a GPU-wide clock lock and/or power limit for a named holder, without a MIG instance or container'
  static description = `For clusters whose scheduler places the workload (a Kubernetes DaemonSet, a Slurm prolog; \`plan -o k8s|slurm\` writes the calls): takes the holder's share ("lease") of the GPU-wide settings and returns. The first holder of a setting records the value in force and sets its own; later holders, and \`up\` sessions wanting the same value, join. A value that differs from one held on that GPU (by another holder or an \`up\` session) is refused and nothing changes.

Journaled like \`up\`: a hold killed half-way is rolled back by \`gpu-cosplay recover\` or the next command on that GPU. Holding again with the same holder and values changes nothing. \`lease release\` (or \`down lease:HOLDER\`, \`down --all\`) ends it; the last holder of any kind restores the values found before the first.`
  static examples = [
    '<%= config.bin %> lease hold --host-gpu 0 --clock-mhz 1395 --power-limit-w 350 --holder slurm-job-42',
    '<%= config.bin %> lease hold --host-gpu 0 --clock-mhz 1395 --holder k8s-gpu-cosplay-lease-3090 --json',
  ]
  static flags = {
    ...hostGpuFlag,
    'clock-mhz': Flags.integer({description: 'lock the graphics clock at this MHz (a clock the GPU supports)', min: 1}),
    'power-limit-w': Flags.string({description: "set the power limit to this many watts (within the GPU's range)"}),
    holder: Flags.string({description: 'who holds it: letters, digits, "_", "." or "-" (e.g. slurm-job-42); release names the same', required: true}),
    ...hostFlag,
  }

  async run(): Promise<LeaseHoldResult> {
    const {flags} = await this.parse(LeaseHold)
    const call = await this.callContext()
    requireRootOnSharedBox(call, 'lease hold', "sets the clock and power limit of every tenant's GPU")
    const remote = await this.forwardToHost(flags.host, renderHold)
    if (remote) return remote.result
    const clockMHz = flags['clock-mhz'] ?? null
    const powerLimitW = flags['power-limit-w'] === undefined ? null : parseWatts(flags['power-limit-w'])
    const quiet = this.jsonEnabled()
    // No spinner: prologs and DaemonSets log stderr line by line, and a hold takes a few nvidia-smi calls.
    const say = (message: string) => (quiet ? undefined : this.logToStderr(message))
    const {holdGpuLease} = await import('../../client/gpu-lease.js')
    const result = await holdGpuLease(call, {hostGpu: flags['host-gpu'], holder: flags.holder, clockMHz, powerLimitW}, say)
    if (!quiet) this.log(renderHold(result))
    return result
  }
}

function parseWatts(input: string): number {
  const watts = Number(input)
  if (/^\d+(\.\d+)?$/.test(input.trim()) && watts > 0) return watts
  throw new InputError('BAD_POWER_LIMIT', `--power-limit-w takes watts, e.g. 350, not "${input}"`)
}
