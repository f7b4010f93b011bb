/**
 * The cosplay image: docker/Dockerfile on a base image, tagged gpu-cosplay:<version> by default.
 * `build` and the first `up` both come here, so they build the same thing with the same progress.
 */
import type {BuildEvent, DockerRuntime} from './runtime.js'
import {LABELS} from '../core/names.js'

/** The Dockerfile's own default: a PyTorch CUDA devel image, so torch is ready inside. */
export const DEFAULT_BASE_REPO = 'pytorch/pytorch'
export const DEFAULT_CUDA_TAG = '2.5.1-cuda12.4-cudnn9-devel'

export function defaultImageTag(version: string): string {
  return `gpu-cosplay:${version}`
}

export function baseImageFor(options: {base?: string; cudaTag?: string}): string {
  return options.base ?? `${DEFAULT_BASE_REPO}:${options.cudaTag ?? DEFAULT_CUDA_TAG}`
}

export type CosplayBuild = {
  readonly tag: string
  readonly base: string
  readonly imageId: string | null
  readonly version: string
}

export async function buildCosplayImage(
  runtime: DockerRuntime,
  options: {base: string; tag: string; version: string; packageRoot: string; noCache?: boolean; onProgress?: (event: BuildEvent) => void},
): Promise<CosplayBuild> {
  const result = await runtime.buildImage({
    contextDir: options.packageRoot,
    src: ['docker', 'runtime-hooks'],
    dockerfile: 'docker/Dockerfile',
    tag: options.tag,
    buildArgs: {BASE_IMAGE: options.base, VERSION: options.version},
    labels: {[LABELS.image]: '1', [LABELS.version]: options.version, [`${LABELS.image}.base`]: options.base},
    noCache: options.noCache,
    onProgress: options.onProgress,
  })
  return {tag: options.tag, base: options.base, imageId: result.imageId, version: options.version}
}

/** One line for a progress event, or null for events not worth a line. */
export function progressLine(event: BuildEvent): string | null {
  if (event.stream) {
    const text = event.stream.replace(/\s+$/, '')
    return text === '' ? null : text
  }
  if (event.status && !event.progress) return `${event.id ? `${event.id}: ` : ''}${event.status}`
  return null
}
