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

/** The error `promise` rejects with, which must be a `type` (by default any CosplayError). */
export async function rejected<E extends CosplayError = CosplayError>(
  promise: Promise<unknown>,
  type: abstract new (...args: any[]) => E = CosplayError as unknown as abstract new (...args: any[]) => E,
): Promise<E> {
  try {
    await promise
  } catch (error) {
    if (error instanceof type) return error
    throw error
  }
  throw new Error(`expected a ${type.name}`)
}
