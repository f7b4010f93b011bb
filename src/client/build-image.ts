/**
 * `build`: the cosplay image built on this box's Docker (container/cosplay-image.ts), its size measured against the
 * base, and, in a shared box's engine, pinned as the image `up` trusts under its tag.
 */
import {DockerRuntime} from '../container/runtime.js'
import {baseImageFor, buildCosplayImage, defaultImageTag, progressLine} from '../container/cosplay-image.js'
import {pinImage} from '../container/image-pin.js'
import type {CallContext} from '../core/call-context.js'
import {packageRoot} from '../core/package-root.js'

export type BuildResult = {tag: string; base: string; imageId: string | null; version: string; sizeBytes: number | null; addedBytes: number | null}

export type BuildRequest = {
  readonly base?: string
  readonly cudaTag?: string
  readonly tag?: string
  readonly noCache: boolean
  readonly version: string
}

/** Builds the image; `say` gets what is built on what, then the build's progress a line at a time. */
export async function buildImage(call: CallContext, request: BuildRequest, say: (line: string) => void): Promise<BuildResult> {
  const runtime = new DockerRuntime()
  await runtime.ping()
  const base = baseImageFor({base: request.base, cudaTag: request.cudaTag})
  const tag = request.tag ?? defaultImageTag(request.version)
  say(`Building ${tag} on ${base}`)
  const built = await buildCosplayImage(runtime, {
    base,
    tag,
    version: request.version,
    packageRoot: packageRoot(),
    noCache: request.noCache,
    onProgress: (event) => {
      const line = progressLine(event)
      if (line) say(`  ${line}`)
    },
  })
  const [image, baseInfo] = await Promise.all([runtime.inspectImage(built.imageId ?? tag), runtime.inspectImage(base)])
  // the engine's own build is the one `up` trusts under this tag (a tag anyone with Docker access can move)
  const engine = call.box
  if (engine && image) pinImage(engine.stateDir, tag, image.id)
  return {
    ...built,
    sizeBytes: image?.sizeBytes ?? null,
    addedBytes: image && baseInfo ? image.sizeBytes - baseInfo.sizeBytes : null,
  }
}
