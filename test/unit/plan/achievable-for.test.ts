import {achievableFor, type CalibrationLookup} from '../../../src/plan/achievable-for.js'
import {calibrationFigures, hostPeak} from '../../../src/plan/calibration-figures.js'
import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import type {Calibration} from '../../../src/host/calibration.js'
import {hostModel, target} from './catalog-for-tests.js'
import {measuredReference} from './reference-for-tests.js'

describe('calibrationFigures', () => {
  // Known measurements (design.md section 6): 8192^3 BF16 GEMM and a device copy counting read + write.
  it.each([
    ['h100-sxm', 800, 3000, 0.81, 0.9],
    ['h200', 790, 4300, 0.8, 0.9],
  ])('%s: %d TFLOP/s BF16 and %d GB/s give the fractions the reference runs imply', (host, bf16, bandwidth, bf16Fraction, bandwidthFraction) => {
    const figures = calibrationFigures(hostModel(host), {fp32Tflops: null, bf16Tflops: bf16, bandwidthGBs: bandwidth})
    expect(figures.peak.bf16Tflops).toBeCloseTo(989.4, 0)
    expect(figures.fractions.bf16).toBeCloseTo(bf16Fraction, 2)
    expect(figures.fractions.bandwidth).toBeCloseTo(bandwidthFraction, 1)
    expect(figures.fractions.fp32).toBeNull()
  })

  it('takes the whole GPU at its maximum clock as the peak', () => {
    expect(hostPeak(hostModel('h200'))).toEqual({fp32Tflops: 66.91, bf16Tflops: 989.4, bandwidthGBs: 4800})
  })
})

function calibration(fractions: Calibration['fractions']): CalibrationLookup {
  const c: Calibration = {
    version: 1,
    gpu: {model: 'h200_sxm', name: 'NVIDIA H200', uuid: 'GPU-1'},
    driver: '550.90.12',
    measuredAt: '2026-11-23T12:00:00.000Z',
    torch: '2.5.1',
    measured: {fp32Tflops: 52, bf16Tflops: 790, bandwidthGBs: 4300},
    peak: {fp32Tflops: 66.91, bf16Tflops: 989.4, bandwidthGBs: 4800},
    fractions,
    samples: {smClockMHz: null, powerW: null, throttleReasons: []},
  }
  return {status: 'found', file: '/state/calibrations/h200_sxm-550.90.12.json', calibration: c}
}

describe('achievableFor', () => {
  const plan = planCosplay(target('4090'), planHostFromModel(hostModel('h200')))

  it('without a calibration: basis peak, no achievable figures, target as in the datasheet', () => {
    const a = achievableFor(plan, {status: 'missing', model: 'h200_sxm', driver: '550.90.12'})
    expect(a.basis).toBe('peak')
    expect(a.calibration).toBeNull()
    expect(a.expected).toEqual({fp32Tflops: null, bf16Tflops: null, bandwidthGBs: null})
    expect(a.target).toEqual({fp32Tflops: plan.target.fp32Tflops, bf16Tflops: plan.target.bf16Tflops, bandwidthGBs: plan.target.bandwidthGBs})
    expect(a.errors).toEqual({fp32Pct: null, bf16Pct: null, bandwidthPct: null})
    expect(achievableFor(plan, {status: 'model'}).basis).toBe('peak')
  })

  it('with one: peak x fraction per axis, the peak where a fraction is missing', () => {
    const a = achievableFor(plan, calibration({fp32: 0.78, bf16: 0.8, bandwidth: null}))
    expect(a.basis).toBe('calibrated')
    expect(a.expected.fp32Tflops).toBeCloseTo(plan.expected.fp32Tflops * 0.78, 1)
    expect(a.expected.bf16Tflops).toBeCloseTo(plan.expected.bf16Tflops * 0.8, 1)
    expect(a.expected.bandwidthGBs).toBeNull()
    expect(a.calibration?.driver).toBe('550.90.12')
    // no achieved figure for the target: no like-with-like error
    expect(a.errors.fp32Pct).toBeNull()
  })

  it('compares like with like where the target has a measured figure too (an estimate is no measurement)', () => {
    const reference = measuredReference({fp32: 23.5})
    const a = achievableFor(plan, calibration({fp32: 0.78, bf16: 0.8, bandwidth: 0.9}), reference)
    expect(a.targetAchieved).toEqual(['fp32'])
    expect(a.target.fp32Tflops).toBe(23.5)
    const want = ((plan.expected.fp32Tflops * 0.78) / 23.5 - 1) * 100
    expect(a.errors.fp32Pct).toBeCloseTo(want, 0)
    expect(a.errors.bf16Pct).toBeNull()
    // uncalibrated host: the target's measured figure is not used (peak vs datasheet stays like with like)
    expect(achievableFor(plan, {status: 'model'}, reference).targetAchieved).toEqual([])
  })
})

describe('plan and verify --perf agree', () => {
  it('give the same calibrated figures and achieved targets for the same plan, calibration and catalog entry', async () => {
    const {expectationsFromPlan, perfReport} = await import('../../../src/plan/perf-verdict.js')
    const plan = planCosplay(target('4090'), planHostFromModel(hostModel('h200')))
    const fractions = {fp32: 0.777, bf16: 0.8123, bandwidth: 0.8957}
    const achieved = measuredReference({fp32: 66.9, bf16: 127.2, bandwidth: 887})
    const a = achievableFor(plan, calibration(fractions), achieved)
    const measured = {measured: 1, unit: 'x'}
    const vram = {measured: 23.875, unit: 'GiB', capGiB: 24, underCapOk: true, overCapRefused: true, hard: null}
    const m = {
      schema: 1,
      device: {name: 'NVIDIA H200', kind: 'cuda', driver: '550.90.12'},
      axes: {fp32: measured, bf16: measured, bandwidth: measured, vram},
      samples: {source: null, count: 0, rows: []},
      elapsedS: 1,
    } as unknown as Parameters<typeof perfReport>[0]
    const r = perfReport(m, expectationsFromPlan(plan), fractions, achieved)
    expect([r.axes.fp32.expectedCalibrated, r.axes.bf16.expectedCalibrated, r.axes.bandwidth.expectedCalibrated]).toEqual([
      a.expected.fp32Tflops,
      a.expected.bf16Tflops,
      a.expected.bandwidthGBs,
    ])
    expect([r.axes.fp32.target, r.axes.bf16.target, r.axes.bandwidth.target]).toEqual([a.target.fp32Tflops, a.target.bf16Tflops, a.target.bandwidthGBs])
  })
})
