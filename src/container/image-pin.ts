/**
 * The default image, pinned. A tag is a name anyone with Docker access can move: the cosplay image must carry our
 * labels for this version, and through the engine its ID must be the one the engine itself built, kept in a
 * root-owned file of the state directory (`images.json`). The session's container is then created from that ID.
 */

import * as z from 'zod'

import {ContainerError} from '../core/errors.js'
import {readJsonFile, writeTextAtomic} from '../core/json-file.js'
import {LABELS} from '../core/names.js'
import {pinnedImagesPath} from '../core/state-layout.js'
import type {ImageInfo} from './runtime.js'

const pinnedImagesSchema = z.strictObject({
  version: z.literal(1),
  /** tag -> the image ID ("sha256:...") the engine built under it */
  images: z.record(z.string(), z.string()),
})

/** The default tag's image is ours, for this version: built from docker/Dockerfile by this gpu-cosplay. */
export function assertCosplayImage(image: ImageInfo, tag: string, version: string): void {
  if (image.labels[LABELS.image] === '1' && image.labels[LABELS.version] === version) return
  throw new ContainerError(
    'IMAGE_NOT_COSPLAY',
    `${tag} (${image.id.slice(0, 19)}) is not the cosplay image of gpu-cosplay ${version} (labels ${LABELS.image}=${image.labels[LABELS.image] ?? '-'}, ${LABELS.version}=${image.labels[LABELS.version] ?? '-'})`,
    {fix: ['build it again: gpu-cosplay build']},
  )
}

/**
 * The images the engine built, by tag. A file root does not own, or that others may write, pins nothing (and so
 * lets nothing through): it is not the engine's word.
 */
export function readPinnedImages(stateDir: string): Readonly<Record<string, string>> {
  try {
    const read = readJsonFile(pinnedImagesPath(stateDir), pinnedImagesSchema, {owner: 0, ownerWritesOnly: true})
    return read?.ok ? read.data.images : {}
  } catch {
    return {}
  }
}

/** Records the ID of an image the engine just built under `tag` (root-owned, writable by root alone). */
export function pinImage(stateDir: string, tag: string, imageId: string): void {
  const images = {...readPinnedImages(stateDir), [tag]: imageId}
  writeTextAtomic(pinnedImagesPath(stateDir), `${JSON.stringify({version: 1, images}, null, 1)}\n`, 0o644)
}

/** Through the engine: the default tag must name the image the engine built, not one moved there since. */
export function assertPinnedImage(stateDir: string, tag: string, image: ImageInfo): void {
  const pinned = readPinnedImages(stateDir)[tag]
  if (pinned === image.id) return
  throw new ContainerError(
    'IMAGE_NOT_PINNED',
    pinned === undefined
      ? `${tag} was not built by this box's gpu-cosplay engine, so it is not trusted`
      : `${tag} is now ${image.id.slice(0, 19)}, not the image this box's engine built (${pinned.slice(0, 19)}): the tag was moved`,
    {fix: ['build it again (through the engine): gpu-cosplay build']},
  )
}
