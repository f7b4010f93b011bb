/**
 * The one polling loop: look, and until a look says done, pause and look again, up to a deadline. Lock waits,
 * readiness waits, the MPS status, the queue and ssh logins use it, each with its own interval, deadline and errors.
 */

/** What a look returns when it should be asked again after the pause. */
export const NOT_YET: unique symbol = Symbol('not yet')

export type PollOptions = {
  /** the pause before the next look, in ms; a function of the looks made so far for a backoff */
  readonly intervalMs: number | ((looks: number) => number)
  /** when to stop (epoch ms); Infinity: never. The first look is always made; none is made after the deadline. */
  readonly deadline: number
  /** the error when the deadline passed and the last look said not yet */
  readonly timedOut: () => Error
  /** stops the wait: checked before each look; a pause ends at once */
  readonly signal?: AbortSignal
  /** the error when `signal` stopped the wait; absent: the signal's reason */
  readonly aborted?: () => Error
}

/**
 * Calls `look` until it returns something other than NOT_YET, and returns that; a look that throws ends the wait with
 * its error. Between looks it pauses `intervalMs`; a look that would come at or after the deadline is not made:
 * `timedOut()` is thrown instead.
 */
export async function pollUntil<T>(look: (looks: number) => Promise<T | typeof NOT_YET> | T | typeof NOT_YET, options: PollOptions): Promise<T> {
  for (let looks = 1; ; looks++) {
    if (options.signal?.aborted) throw options.aborted?.() ?? options.signal.reason
    if (looks > 1 && Date.now() >= options.deadline) throw options.timedOut()
    const got = await look(looks)
    if (got !== NOT_YET) return got
    const pauseMs = typeof options.intervalMs === 'number' ? options.intervalMs : options.intervalMs(looks)
    await pause(pauseMs, options.signal)
  }
}

/** Resolves after `ms`, or at once when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done() {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, {once: true})
  })
}
