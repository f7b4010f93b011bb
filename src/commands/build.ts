import {Flags} from '@oclif/core'

import {packageRoot} from '../core/package-root.js'
import {requireRootOnSharedBox} from '../core/invoking-user.js'
import {BaseCommand} from '../shell/base-command.js'

export type BuildResult = {tag: string; base: string; imageId: string | null; version: string; sizeBytes: number | null; addedBytes: number | null}

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
    requireRootOnSharedBox('build', 'replaces the image every session on this box runs')
    const [{DockerRuntime}, {baseImageFor, buildCosplayImage, defaultImageTag, progressLine}] = await Promise.all([
      import('../container/runtime.js'),
      import('../container/cosplay-image.js'),
    ])
    const runtime = new DockerRuntime()
    await runtime.ping()
    const quiet = this.jsonEnabled()
    const base = baseImageFor({base: flags.base, cudaTag: flags['cuda-tag']})
    const tag = flags.tag ?? defaultImageTag(this.config.version)
    if (!quiet) this.logToStderr(`Building ${tag} on ${base}`)
    const built = await buildCosplayImage(runtime, {
      base,
      tag,
      version: this.config.version,
      packageRoot: packageRoot(),
      noCache: flags['no-cache'],
      onProgress: (event) => {
        const line = progressLine(event)
        if (line && !quiet) this.logToStderr(`  ${line}`)
      },
    })
    const [image, baseInfo] = await Promise.all([runtime.inspectImage(built.imageId ?? tag), runtime.inspectImage(base)])
    // the engine's own build is the one `up` trusts under this tag (a tag anyone with Docker access can move)
    const engine = (await import('../core/box-config.js')).engineBoxConfig()
    if (engine && image) (await import('../container/image-pin.js')).pinImage(engine.stateDir, tag, image.id)
    const result: BuildResult = {
      ...built,
      sizeBytes: image?.sizeBytes ?? null,
      addedBytes: image && baseInfo ? image.sizeBytes - baseInfo.sizeBytes : null,
    }
    if (!quiet) {
      const added = result.addedBytes === null ? '' : ` (${(result.addedBytes / 1024 / 1024).toFixed(1)} MiB on top of the base)`
      this.log(`Built ${tag}${added}`)
    }
    return result
  }
}
