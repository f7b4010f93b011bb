// What the bench scripts share: the median they report (these machines are shared and noisy), and the checkout a
// compare-* script times this one against.
import {resolve} from 'node:path'

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

/** This checkout and the built one named by the first argument; without it, the usage and exit 2. */
export function checkouts(usage) {
  if (!process.argv[2]) {
    console.error(`usage: ${usage}`)
    process.exit(2)
  }
  return {other: resolve(process.argv[2]), this: new URL('..', import.meta.url).pathname}
}
