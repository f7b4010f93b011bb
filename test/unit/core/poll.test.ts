import {NOT_YET, pause, pollUntil} from '../../../src/core/poll.js'

const never = () => new Error('timed out')

describe('pollUntil: the one polling loop', () => {
  test('returns what the first look other than NOT_YET returns, pausing between looks', async () => {
    const seen: number[] = []
    const got = await pollUntil((looks) => (seen.push(looks), looks < 3 ? NOT_YET : 'ready'), {intervalMs: 5, deadline: Date.now() + 5_000, timedOut: never})
    expect([got, seen]).toEqual(['ready', [1, 2, 3]])
  })

  test('looks once however early the deadline, and never after it: then timedOut()', async () => {
    let looks = 0
    const error = await pollUntil(() => (looks++, NOT_YET), {
      intervalMs: 20,
      deadline: Date.now() - 1,
      timedOut: () => Object.assign(new Error('late'), {code: 'LATE'}),
    }).catch((e: unknown) => e)
    expect([looks, (error as {code: string}).code]).toEqual([1, 'LATE'])
  })

  test('a look that throws ends the wait with its error; the pause may grow with the looks made', async () => {
    const pauses: number[] = []
    const failing = pollUntil((looks) => (looks === 3 ? Promise.reject(new Error('refused')) : NOT_YET), {
      intervalMs: (looks) => (pauses.push(looks * 2), looks * 2),
      deadline: Infinity,
      timedOut: never,
    })
    await expect(failing).rejects.toThrow('refused')
    expect(pauses).toEqual([2, 4])
  })

  test('an abort ends a pause at once, with the caller error or the signal reason', async () => {
    const stop = new AbortController()
    const started = Date.now()
    const waiting = pollUntil(() => NOT_YET, {intervalMs: 60_000, deadline: Infinity, timedOut: never, signal: stop.signal, aborted: () => new Error('left')})
    setTimeout(() => stop.abort(), 20)
    await expect(waiting).rejects.toThrow('left')
    expect(Date.now() - started).toBeLessThan(5_000)
    const stopped = new AbortController()
    stopped.abort()
    await expect(pollUntil(() => NOT_YET, {intervalMs: 1, deadline: Infinity, timedOut: never, signal: stopped.signal})).rejects.toMatchObject({
      name: 'AbortError',
    })
    await pause(1, stopped.signal)
  })
})
