/**
 * Issue 27: durations people type (--ttl, --timeout, extend --by, the box's TTL settings) are bounded, so that no
 * digit string becomes Infinity, a number past 2^53 or a date no clock can hold.
 */
import {describe, expect, it} from '@jest/globals'

import {durationMs, MAX_DURATION_MS, parseDuration} from '../../../src/core/duration.js'

const DAY_MS = 86_400_000

describe('durations', () => {
  it.each([
    ['90s', 90_000],
    ['1h30m', 5_400_000],
    ['2d', 2 * DAY_MS],
    ['366d', 366 * DAY_MS],
    ['8784h', 366 * DAY_MS],
    ['0001m', 60_000],
  ])('%s is %d ms', (text, ms) => {
    expect(durationMs(text)).toBe(ms)
    expect(parseDuration(text, '--ttl')).toBe(ms)
  })

  it.each([
    ['a day past the bound', '367d'],
    ['parts that add up past the bound', '365d24h1s'],
    ['a count past 2^53', '9007199254740993s'],
    ['400 nines (Infinity as a Number)', '9'.repeat(400) + 'd'],
    ['10^30 seconds', '1' + '0'.repeat(30) + 's'],
    ['400 parts', '1d'.repeat(400)],
    ['one second behind 5000 zeros', '0'.repeat(5000) + '1s'],
  ])('%s is refused: BAD_DURATION, exit 2', (_label, text) => {
    expect(durationMs(text)).toBeNull()
    expect(() => parseDuration(text, '--ttl')).toThrow(expect.objectContaining({code: 'BAD_DURATION', exit: 2}))
  })

  it('the bound is 366 days', () => {
    expect(MAX_DURATION_MS).toBe(366 * DAY_MS)
  })
})
