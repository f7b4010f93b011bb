import type {BuildResult} from '../client/build-image.js'

/** The text view of `build`: the tag, and how much it adds to the base. */
export function renderBuild(r: BuildResult): string {
  const added = r.addedBytes === null ? '' : ` (${(r.addedBytes / 1024 / 1024).toFixed(1)} MiB on top of the base)`
  return `Built ${r.tag}${added}`
}
