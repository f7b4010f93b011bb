import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import type {PerfMeasurement} from '../../../src/host/perf-measurement.js'
import {hostRatesOf, measuredAt} from '../../../src/plan/measured-throughput.js'
import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {bandVerdict, expectationsFromPlan, PERF_AXES, perfReport, type PerfExpectations, sessionMethodRatio} from '../../../src/plan/perf-verdict.js'
import {hostModel, target} from './catalog-for-tests.js'
import {measuredReference} from './reference-for-tests.js'

const EXPECTATIONS: PerfExpectations = {
  hostModel: 'h200_sxm',
  targetKey: 'rtx_3090',
  peak: {fp32Tflops: 20, bf16Tflops: 300, bandwidthGBs: 1200, vramGiB: 24},
  target: {fp32Tflops: 35.58, bf16Tflops: 71.2, bandwidthGBs: 936, vramGB: 24},
}

function measurement(
  over: {kind?: 'cuda' | 'cpu'; fp32?: number | null; bf16?: number | null; bandwidth?: number | null; vram?: Record<string, unknown>} = {},
): PerfMeasurement {
  const kind = over.kind ?? 'cuda'
  const axis = (v: number | null | undefined, fallback: number, unit: string) => ({
    measured: v === undefined ? fallback : v,
    unit,
    ...(v === null ? {error: 'RuntimeError: boom'} : {}),
  })
  return {
    schema: 1,
    device: {name: kind === 'cuda' ? 'NVIDIA GeForce RTX 3090' : 'AMD EPYC', kind, driver: kind === 'cuda' ? '550.90.12' : null},
    axes: {
      fp32: axis(over.fp32, 20, 'TFLOPS'),
      bf16: axis(over.bf16, 300, 'TFLOPS'),
      bandwidth: axis(over.bandwidth, 1200, 'GB/s'),
      vram: over.vram
        ? {measured: 23.8, unit: 'GiB', ...over.vram}
        : kind === 'cpu'
          ? {measured: null, unit: 'GiB', skipped: 'CPU run'}
          : {measured: 23.875, unit: 'GiB', capGiB: 24, underCapOk: true, overCapRefused: true, hard: null},
    },
    samples: {source: null, count: 0, rows: []},
    elapsedS: 3,
  } as PerfMeasurement
}

describe('verdict bands', () => {
  it.each([
    [100, 100, 'PASS'],
    [90, 100, 'PASS'], // exactly 10% under
    [110, 100, 'PASS'], // and over: too fast imitates badly too
    [89.9, 100, 'WARN'],
    [75, 100, 'WARN'],
    [125, 100, 'WARN'],
    [74.9, 100, 'FAIL'],
    [130, 100, 'FAIL'],
    [0, 100, 'FAIL'],
    [5, 0, 'FAIL'],
  ])('%d measured against %d expected: %s', (measured, expected, verdict) => {
    expect(bandVerdict(measured, expected)).toBe(verdict)
  })
})

describe('perfReport', () => {
  it('gives each axis exactly measured, unit, expectedPeak, expectedCalibrated, target and verdict', () => {
    const r = perfReport(measurement(), EXPECTATIONS, null)
    expect(Object.keys(r).sort()).toEqual(['axes', 'clock', 'device', 'expectation', 'samples', 'vramCap'])
    expect(Object.keys(r.axes)).toEqual([...PERF_AXES])
    for (const axis of PERF_AXES) {
      expect(Object.keys(r.axes[axis]).sort()).toEqual([
        'expectedCalibrated',
        'expectedMeasured',
        'expectedPeak',
        'measured',
        'reference',
        'target',
        'unit',
        'verdict',
        'vsReferencePct',
      ])
    }
    expect(r.device).toEqual({name: 'NVIDIA GeForce RTX 3090', kind: 'cuda', driver: '550.90.12'})
  })

  it('without a calibration holds each axis to the peak', () => {
    const r = perfReport(measurement({bf16: 240, bandwidth: 1080}), EXPECTATIONS, null)
    expect(r.expectation.basis).toBe('peak')
    expect(r.axes.bf16).toEqual({
      measured: 240,
      unit: 'TFLOPS',
      expectedPeak: 300,
      expectedCalibrated: null,
      expectedMeasured: null,
      target: 71.2,
      reference: null,
      vsReferencePct: null,
      verdict: 'WARN',
    })
    expect(r.axes.bandwidth.verdict).toBe('PASS')
    expect(r.axes.fp32.verdict).toBe('PASS')
  })

  it('with a calibration holds each axis to peak x fraction', () => {
    const r = perfReport(measurement({fp32: 15.6, bf16: 240, bandwidth: 1080}), EXPECTATIONS, {fp32: 0.78, bf16: 0.8, bandwidth: 0.9})
    expect(r.expectation.basis).toBe('calibrated')
    expect(r.axes.fp32).toMatchObject({expectedPeak: 20, expectedCalibrated: 15.6, verdict: 'PASS'})
    expect(r.axes.bf16).toMatchObject({expectedCalibrated: 240, verdict: 'PASS'})
    expect(r.axes.bandwidth).toMatchObject({expectedCalibrated: 1080, verdict: 'PASS'})
    // a null fraction (that axis failed during calibrate) falls back to the peak
    expect(perfReport(measurement({bf16: 240}), EXPECTATIONS, {fp32: 0.78, bf16: null, bandwidth: 0.9}).axes.bf16).toMatchObject({
      expectedCalibrated: null,
      verdict: 'WARN',
    })
  })

  it('fails an axis whose measurement failed, and one far off', () => {
    const r = perfReport(measurement({fp32: null, bf16: 100}), EXPECTATIONS, null)
    expect(r.axes.fp32.verdict).toBe('FAIL')
    expect(r.axes.bf16.verdict).toBe('FAIL')
  })

  it('compares the target like with like: its measured figure only when this host is calibrated', () => {
    const fraction = measuredReference({fp32: 23.48})
    expect(perfReport(measurement(), EXPECTATIONS, null, fraction).axes.fp32.target).toBe(35.58)
    const calibrated = perfReport(measurement(), EXPECTATIONS, {fp32: 0.78, bf16: 0.8, bandwidth: 0.9}, fraction)
    expect(calibrated.axes.fp32.target).toBeCloseTo(23.48, 2)
    expect(calibrated.expectation.targetAchieved).toEqual(['fp32'])
    expect(calibrated.axes.bf16.target).toBe(71.2)
  })

  describe('the VRAM cap', () => {
    it('passes when up to the cap works and one GiB more is refused', () => {
      const r = perfReport(measurement(), EXPECTATIONS, null)
      expect(r.axes.vram).toMatchObject({measured: 23.875, unit: 'GiB', expectedPeak: 24, target: 24, verdict: 'PASS'})
      expect(r.vramCap).toEqual({capGiB: 24, underCapOk: true, overCapRefused: true, cupyRefused: null, hard: null, hardPlanned: false, note: null})
    })

    it('reports what CuPy saw: its own limit, and whether the cap is hard', () => {
      const cupy = {installed: true, libraryRefused: true, rawRefused: false}
      const r = perfReport(measurement({vram: {measured: 23.875, capGiB: 24, underCapOk: true, overCapRefused: true, hard: false, cupy}}), EXPECTATIONS, null)
      expect(r.vramCap).toMatchObject({cupyRefused: true, hard: false})
      expect(r.axes.vram.verdict).toBe('PASS')
    })

    it('warns when the plan set a hard limit and the driver granted memory past it, with the reason', () => {
      const vram = {measured: 23.97, capGiB: 24, underCapOk: true, overCapRefused: true, hard: false, hardReason: 'the driver granted 64 MiB past the limit'}
      const hardPlanned = {...EXPECTATIONS, hardCapPlanned: true}
      const r = perfReport(measurement({vram}), hardPlanned, null)
      expect(r.axes.vram.verdict).toBe('WARN')
      expect(r.vramCap).toMatchObject({hard: false, hardPlanned: true})
      expect(r.vramCap?.note).toContain('granted 64 MiB')
      expect(perfReport(measurement({vram: {...vram, hard: true}}), hardPlanned, null).axes.vram.verdict).toBe('PASS')
      expect(perfReport(measurement({vram}), EXPECTATIONS, null).axes.vram.verdict).toBe('PASS')
    })

    it('fails when allocating past the cap succeeds', () => {
      expect(perfReport(measurement({vram: {overCapRefused: false, underCapOk: true}}), EXPECTATIONS, null).axes.vram.verdict).toBe('FAIL')
    })

    it('judges a cap that gives less than promised by how much less', () => {
      expect(perfReport(measurement({vram: {measured: 18, overCapRefused: true, underCapOk: false}}), EXPECTATIONS, null).axes.vram.verdict).toBe('WARN')
      expect(perfReport(measurement({vram: {measured: null, overCapRefused: true, underCapOk: false}}), EXPECTATIONS, null).axes.vram.verdict).toBe('FAIL')
    })
  })

  it('holds compute axes to the expectation at the clock observed while they were timed', () => {
    // the plan assumed 1980 MHz; others' power draw held the clock at 1485 MHz (75%) while FP32 ran
    const m = measurement({fp32: 15, bf16: 300})
    const rows = [{smClockMHz: 1485, axis: 'fp32'}]
    const byAxis = {fp32: {smClockMHz: {min: 1480, median: 1485, max: 1490}}, bf16: {smClockMHz: {min: 1975, median: 1980, max: 1980}}}
    const sampled = {
      ...m,
      samples: {source: 'nvidia-smi', count: 1, rows, summary: {smClockMHz: null, powerW: null, throttleReasons: [], byAxis}},
    } as PerfMeasurement
    const e = {...EXPECTATIONS, effectiveClockMHz: 1980}
    const r = perfReport(sampled, e, null)
    expect(r.clock).toEqual({plannedMHz: 1980, observedMHz: {fp32: 1485, bf16: 1980}, factor: {fp32: 0.75, bf16: 1}})
    expect(r.axes.fp32.verdict).toBe('PASS')
    // without the observed clock the same figure is 25% short
    expect(perfReport(m, e, null).axes.fp32.verdict).toBe('WARN')
  })

  it('labels a CPU run and skips every verdict (its figures say nothing about the GPU)', () => {
    const r = perfReport(measurement({kind: 'cpu', fp32: 0.007, bf16: 0.3, bandwidth: 40}), EXPECTATIONS, {fp32: 0.78, bf16: 0.8, bandwidth: 0.9})
    expect(r.device.kind).toBe('cpu')
    expect(PERF_AXES.map((a) => r.axes[a].verdict)).toEqual(['SKIP', 'SKIP', 'SKIP', 'SKIP'])
    expect(r.axes.fp32.measured).toBe(0.007)
    expect(r.vramCap).toBeNull()
  })
})

describe('expectationsFromPlan', () => {
  it('reads what a stored plan promised', () => {
    const plan = planCosplay(target('3090'), planHostFromModel(hostModel('h200')))
    const e = expectationsFromPlan(plan)
    expect(e).toEqual({
      hostModel: 'h200_sxm',
      effectiveClockMHz: plan.effectiveClockMHz,
      hardCapPlanned: plan.mps !== null,
      measured: plan.measured!.expected,
      allocatableGiB: Math.round((plan.memory!.allocatableMiB / 1024) * 1000) / 1000,
      targetKey: 'rtx_3090',
      peak: {fp32Tflops: plan.expected.fp32Tflops, bf16Tflops: plan.expected.bf16Tflops, bandwidthGBs: plan.expected.bandwidthGBs, vramGiB: 24},
      target: {fp32Tflops: plan.target.fp32Tflops, bf16Tflops: plan.target.bf16Tflops, bandwidthGBs: plan.target.bandwidthGBs, vramGB: 24},
    })
  })
})

describe('verify --perf against the real card', () => {
  const model = hostModel('h200')
  const rates = hostRatesOf(model)!
  const fixture = (name: string) => JSON.parse(readFileSync(join(process.cwd(), 'test', 'fixtures', 'perf', name), 'utf8')) as PerfMeasurement

  it("restates the plan's measured expectation in the session's method, by the host card's figures in both", () => {
    const ratio = sessionMethodRatio(model.measuredRates)
    // FP32 by gpu_cosplay_perf.py over torch.mm best-of-sizes; BF16 by the MPS sweep (full clock); copy is already in it
    expect(ratio.fp32).toBeCloseTo(51.24 / 51.34, 6)
    expect(ratio.bf16).toBeCloseTo(775.1 / 790.29, 6)
    expect(ratio.bandwidth).toBe(1)
    expect(sessionMethodRatio(undefined)).toEqual({fp32: null, bf16: null, bandwidth: null})
  })

  it("holds this project's H200 MPS run (66 SMs, 16 GiB pinned) to a plan of its SMs and limit: BF16 within 4%", () => {
    const m = fixture('h200-mps50-pinned16g.json')
    const measured = measuredAt(model, rates, 66, 1980, model.bandwidthGBs)
    const e: PerfExpectations = {
      ...EXPECTATIONS,
      effectiveClockMHz: 1980,
      tensorClockMaxMHz: 1830,
      hardCapPlanned: true,
      measured,
      allocatableGiB: (16384 - 403) / 1024,
    }
    const r = perfReport(m, e, null, target('3090').reference, model.measuredRates)
    expect(r.expectation.basis).toBe('measured')
    // it held 1920 MHz, above the 1830 MHz tensor clock: no scaling for BF16 (FP32 runs at the SM clock)
    expect([r.clock.factor.bf16, r.clock.factor.fp32]).toEqual([1, 1])
    // the sweep (another run) and this session (another method) agree on BF16 with 66 SMs
    expect(Math.abs(m.axes.bf16.measured! / r.axes.bf16.expectedMeasured! - 1)).toBeLessThan(0.04)
    expect(r.axes.bf16.verdict).toBe('PASS')
    // a 4096^3 FP32 GEMM on 66 SMs (the size the session could afford) reads 15% under the whole-GPU share: a WARN, said
    expect(r.axes.fp32.verdict).toBe('WARN')
    expect(r.axes.vram.verdict).toBe('PASS')
  })

  it('counts the clock a BF16 run held only below the tensor clock: the whole-GPU run at 1492 MHz passes', () => {
    const m = fixture('h200-whole-gpu.json')
    const e: PerfExpectations = {...EXPECTATIONS, effectiveClockMHz: 1980, tensorClockMaxMHz: 1830, measured: measuredAt(model, rates, 132, 1980, 4800)}
    const r = perfReport(m, e, null, undefined, model.measuredRates)
    expect(r.clock.factor.bf16).toBeCloseTo(1492.5 / 1830, 3)
    expect(r.axes.bf16.verdict).toBe('PASS')
    // without the tensor clock the same run would be held to 1492 / 1980 of the figure, and warn
    expect(perfReport(m, {...e, tensorClockMaxMHz: undefined}, null, undefined, model.measuredRates).axes.bf16.verdict).toBe('WARN')
  })

  it("puts each axis beside what the real card measures, by the card's method, and says the methods differ", () => {
    const m = fixture('h200-whole-gpu.json')
    const r = perfReport(
      m,
      {...EXPECTATIONS, measured: {fp32Tflops: 51.34, bf16Tflops: 790.3, bandwidthGBs: 4270}},
      null,
      target('3090').reference,
      model.measuredRates,
    )
    expect(r.axes.fp32.reference).toEqual({value: 24.625, basis: 'measured', method: 'matmul-best-of-sizes', source: expect.stringContaining('zzc0721')})
    expect(r.axes.fp32.vsReferencePct).toBeCloseTo((51.24 / 24.625 - 1) * 100, 1)
    expect(r.axes.bandwidth.reference).toMatchObject({value: 831, method: 'copy-2x-time'})
    expect(r.axes.vram.reference).toMatchObject({value: Math.round((24268 / 1024) * 1000) / 1000, method: 'device-properties'})
    expect(r.expectation.method).toBe('cosplay-perf')
    expect(r.expectation.note).toMatch(/a method apart/)
  })

  it('holds the VRAM axis to what the plan says a program can allocate, not the card size', () => {
    const vram = {measured: 23.3, capGiB: 23.7, underCapOk: false, overCapRefused: true, hard: true}
    const e = {...EXPECTATIONS, allocatableGiB: 23.3}
    expect(perfReport(measurement({vram}), e, null).axes.vram).toMatchObject({expectedMeasured: 23.3, verdict: 'PASS'})
    expect(perfReport(measurement({vram: {...vram, measured: 19}}), e, null).axes.vram.verdict).toBe('WARN')
  })
})
