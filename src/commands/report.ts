import {Args, Flags} from '@oclif/core'

import {readFitReport, type ReportResult} from '../client/fit-report.js'
import {renderReport} from '../render/render-report.js'
import {BaseCommand} from '../shell/base-command.js'

export default class Report extends BaseCommand {
  static summary = "Show how close each process came to the target card's memory"
  static description = `Reads the fit report the costume hook writes when a Python process that used CUDA exits (<workspace>/.gpu-cosplay/fit.jsonl, one line per process) and shows, per process, the peak memory PyTorch reserved and allocated against the cap: the headroom left, or "would OOM on the target". Works after \`down\` too, with --workspace.`
  static examples = ['<%= config.bin %> report', '<%= config.bin %> report --workspace ~/proj --json']
  static args = {name: Args.string({description: 'session name (default: your only session)'})}
  static flags = {workspace: Flags.string({description: "read this workspace instead of the session's"})}

  async run(): Promise<ReportResult> {
    const {args, flags} = await this.parse(Report)
    // the session's workspace comes from the engine (its owner only); the file is read here, with the caller's rights
    const dir =
      flags.workspace ??
      (await (await import('../engine/perform.js')).perform({op: 'session', name: args.name ?? null}, {progress: null}, this.config.version)).workspace
    const result = readFitReport(dir)
    if (!this.jsonEnabled()) this.log(renderReport(result))
    return result
  }
}
