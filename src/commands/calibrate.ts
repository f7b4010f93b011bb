import {Flags, ux} from '@oclif/core'

import type {CalibrateResult} from '../measure/calibrate-host.js'
import {requireRootOnSharedBox} from '../core/call-context.js'
import {BaseCommand} from '../shell/base-command.js'
import {renderCalibrate} from '../render/render-calibrate.js'

export default class Calibrate extends BaseCommand {
  static summary = 'Measure what a host GPU really reaches, so that plan and verify --perf expect achievable figures'
  static description = `Runs the same measurement as verify --perf (FP32 and BF16 GEMM, copy bandwidth; torch with CUDA events) on one whole host GPU with the host's python3 (GPU_COSPLAY_PYTHON overrides; it needs torch built for CUDA), and stores the achieved fraction of the datasheet peak per axis for that GPU model and driver in the state directory (calibrations/<model>-<driver>.json, replacing that model's files from other drivers). plan then shows "achievable" next to the peak, and verify --perf holds sessions to it. Changes nothing on the GPU. Refuses a GPU with MIG mode on or with sessions on it; fails without a CUDA GPU.`
  static examples = ['<%= config.bin %> calibrate', '<%= config.bin %> calibrate --host-gpu 1 --json']
  static flags = {
    'host-gpu': Flags.integer({description: 'index of the host GPU to measure (default 0)', min: 0}),
  }

  async run(): Promise<CalibrateResult> {
    const {flags} = await this.parse(Calibrate)
    const call = await this.callContext()
    requireRootOnSharedBox(call, 'calibrate', 'sets the achievable figures every plan on this box is held to')
    const index = flags['host-gpu'] ?? 0
    const {calibrateHost} = await import('../measure/calibrate-host.js')
    const quiet = this.jsonEnabled()
    if (!quiet) ux.action.start(`Measuring GPU ${index} (about 10-30 s)`)
    let result: CalibrateResult
    try {
      result = await calibrateHost(call, index, new Date())
    } catch (error) {
      if (!quiet) ux.action.stop('failed')
      throw error
    }
    if (!quiet) {
      ux.action.stop('done')
      this.log(renderCalibrate(result))
    }
    return result
  }
}
