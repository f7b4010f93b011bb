import {readFileSync} from 'node:fs'

import {MPS_MIN_SMS_WHOLE_GPU, mpsLevels, smsForPercentage} from '../../../src/plan/mps-shaping.js'

type Sweep = {rows: {percentage: number; smidSms: number; attrSms: number}[]}
// measured on a real H200 with bench/gpu/mps_sweep.py (see the file's gpu/date/how fields)
const sweep = JSON.parse(readFileSync('test/fixtures/mps/h200-mps-sweep.json', 'utf8')) as Sweep

describe('MPS percentage -> SMs', () => {
  it('reads a measurement that covers the whole range', () => {
    expect(sweep.rows.length).toBeGreaterThanOrEqual(30)
    expect(sweep.rows.map((r) => r.percentage)).toEqual(expect.arrayContaining([1, 5, 50, 75, 99, 100]))
  })

  it.each(sweep.rows.map((r) => [r.percentage, r.smidSms, r.attrSms]))(
    '%i%% of an H200 gives the SMs its kernels ran on (%i) and the count the client was told (%i)',
    (percentage, smid, attr) => {
      expect(attr).toBe(smid)
      expect(smsForPercentage(percentage, 132, MPS_MIN_SMS_WHOLE_GPU)).toBe(smid)
    },
  )

  it('never promises more than the slice nor fewer than the floor; in a MIG slice the floor is one TPC (not measured)', () => {
    expect(smsForPercentage(1, 16, MPS_MIN_SMS_WHOLE_GPU)).toBe(8)
    expect(smsForPercentage(100, 16)).toBe(16)
    expect(smsForPercentage(1, 6, MPS_MIN_SMS_WHOLE_GPU)).toBe(6)
    expect(smsForPercentage(1, 16)).toBe(2)
    expect(smsForPercentage(38, 16)).toBe(6)
  })

  it('lists each reachable SM count with the smallest percentage that reaches it', () => {
    const levels = mpsLevels(132, MPS_MIN_SMS_WHOLE_GPU)
    expect(levels[0]).toEqual({activeThreadPercentage: 1, smCount: 8})
    expect(levels.find((l) => l.smCount === 70)).toEqual({activeThreadPercentage: 54, smCount: 70})
    expect(levels.at(-1)).toEqual({activeThreadPercentage: 100, smCount: 132})
    for (const {activeThreadPercentage, smCount} of levels) expect(smsForPercentage(activeThreadPercentage, 132, MPS_MIN_SMS_WHOLE_GPU)).toBe(smCount)
  })
})
