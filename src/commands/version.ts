import {BaseCommand} from '../shell/base-command.js'

export type VersionResult = {version: string; node: string; platform: string; arch: string}

export default class Version extends BaseCommand {
  static summary = 'Show the version of gpu-cosplay'
  static examples = ['<%= config.bin %> version', '<%= config.bin %> --version']

  async run(): Promise<VersionResult> {
    await this.parse(Version)
    const result = {version: this.config.version, node: process.version, platform: this.config.platform, arch: this.config.arch}
    if (!this.jsonEnabled()) this.log(this.config.userAgent)
    return result
  }
}
