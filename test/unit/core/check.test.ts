import {noneMissing, tally, VERDICTS} from '../../../src/core/check.js'

describe('tally', () => {
  it('counts each status, every key present and in the order given', () => {
    const counts = tally(VERDICTS, ['SKIP', 'PASS', 'PASS'])
    expect(counts).toEqual({PASS: 2, FAIL: 0, SKIP: 1})
    expect(JSON.stringify(counts)).toBe('{"PASS":2,"FAIL":0,"SKIP":1}')
  })
})

describe('noneMissing', () => {
  it('is false only when some check is missing; a warning does not count', () => {
    const check = (status: 'ok' | 'missing' | 'warn') => ({name: status, status, detail: '', fix: []})
    expect(noneMissing([check('ok'), check('warn')])).toBe(true)
    expect(noneMissing([check('ok'), check('missing')])).toBe(false)
    expect(noneMissing([])).toBe(true)
  })
})
