import {CosplayError} from '../../../src/core/errors.js'

/** The CosplayError `fn` throws; tests then check its code and exit, never its wording. */
export function thrown(fn: () => unknown): CosplayError {
  try {
    fn()
  } catch (error) {
    if (error instanceof CosplayError) return error
    throw error
  }
  throw new Error('expected a CosplayError')
}
