/**
 * Image references as Docker's grammar writes them (distribution/reference): `[domain[:port]/]path[:tag][@digest]`,
 * which also covers an image ID (`sha256:<hex>`, or its hex alone). Anything else is refused before it reaches the
 * engine: the engine's API takes the reference in its URL path (`/images/<ref>/json`), where `../`, `?` or `#` would
 * name another endpoint. IPv6 registry addresses (`[::1]:5000/...`) are refused too: their brackets have no place in a
 * path, and a registry by name serves the same image.
 */
import {InputError} from './errors.js'

const ALPHANUMERIC = '[a-z0-9]+'
const SEPARATOR = '(?:[._]|__|-+)'
const PATH_COMPONENT = `${ALPHANUMERIC}(?:${SEPARATOR}${ALPHANUMERIC})*`
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])'
const DOMAIN = `${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*(?::[0-9]+)?`
const TAG = '[\\w][\\w.-]{0,127}'
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}'
const NAME = `(?:${DOMAIN}/)?${PATH_COMPONENT}(?:/${PATH_COMPONENT})*`
const REFERENCE = new RegExp(`^(${NAME})(?::${TAG})?(?:@${DIGEST})?$`)

/** Docker's limit on a name (without tag and digest). */
const NAME_MAX_LENGTH = 255
/** A digest of the longest algorithm Docker knows (sha512) and a long name and tag fit well within this. */
const REFERENCE_MAX_LENGTH = 512

export function isImageRef(text: string): boolean {
  if (text.length > REFERENCE_MAX_LENGTH) return false
  const match = REFERENCE.exec(text)
  return match !== null && match[1].length <= NAME_MAX_LENGTH
}

/** `what`: where the reference came from, for the message (`--image`, `--base`). */
export function assertImageRef(text: string, what = 'image'): void {
  if (isImageRef(text)) return
  throw new InputError('BAD_IMAGE', `${what} ${JSON.stringify(text.slice(0, 80))} is not an image reference`, {
    fix: ['name an image as Docker does: NAME[:TAG][@DIGEST] (e.g. pytorch/pytorch:2.3.0-cuda12.1-cudnn8-runtime), or its ID'],
  })
}
