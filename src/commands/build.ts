import {Flags} from '@oclif/core'

import type {BuildResult} from '../client/build-image.js'
import {requireRootOnSharedBox} from '../core/call-context.js'
import {renderBuild} from '../render/render-build.js'
import {BaseCommand} from '../shell/base-command.js'

export default class Build extends BaseCommand {
  static summary = 'Build the cosplay image: a base image plus sshd, sudo, tini and the costume hooks'
  static description = `Builds docker/Dockerfile on a base image (default pytorch/pytorch:${'2.5.1-cuda12.4-cudnn9-devel'}, so torch is ready inside) and tags it gpu-cosplay:<version>, the image \`up\` uses by default (\`up\` builds it on first use). It adds only openssh-server, sudo, tini, python3 where the base lacks them, the runtime hooks, the nvidia-smi shim and the entrypoint. Build output streams to stderr.

The default base is pulled from Docker Hub the first time. Without network access, build on an image you already have: --base IMAGE (any Debian/Ubuntu-like image; torch is then whatever that image has).`
  static examples = [
    '<%= config.bin %> build',
    '<%= config.bin %> build --cuda-tag 2.4.1-cuda12.1-cudnn9-devel',
    '<%= config.bin %> build --base my-registry/ml:latest --tag gpu-cosplay:ml',
  ]
  static flags = {
    base: Flags.string({description: 'base image (any Debian/Ubuntu-like image)', exclusive: ['cuda-tag']}),
    'cuda-tag': Flags.string({description: 'tag of the default pytorch/pytorch base, e.g. 2.4.1-cuda12.1-cudnn9-devel', exclusive: ['base']}),
    tag: Flags.string({description: 'tag for the result (default gpu-cosplay:<version>)'}),
    'no-cache': Flags.boolean({description: 'rebuild every layer'}),
  }

  async run(): Promise<BuildResult> {
    const {flags} = await this.parse(Build)
    const call = await this.callContext()
    requireRootOnSharedBox(call, 'build', 'replaces the image every session on this box runs')
    const {buildImage} = await import('../client/build-image.js')
    const quiet = this.jsonEnabled()
    const request = {base: flags.base, cudaTag: flags['cuda-tag'], tag: flags.tag, noCache: flags['no-cache'], version: this.config.version}
    const result = await buildImage(call, request, (line) => quiet || this.logToStderr(line))
    if (!quiet) this.log(renderBuild(result))
    return result
  }
}
