import {estimateAchieved, fitAchievedModel, leaveOneOut, processNm, tensorDatasheet, workPower} from '../../../src/catalog/achieved-model.js'
import type {Target} from '../../../src/catalog/types.js'
import {builtinCatalog, target} from '../plan/catalog-for-tests.js'

const targets = builtinCatalog().targets
const model = fitAchievedModel(targets)
const rows = leaveOneOut(targets)

describe('the estimate of what a card measures, from its datasheet', () => {
  it('is fitted on the measured cards: a process and a width exponent, a knee per axis and, per class, what cuBLAS reaches at the knee', () => {
    expect(model.fp32.cards).toBeGreaterThanOrEqual(25)
    expect(model.tensor.cards).toBeGreaterThanOrEqual(25)
    expect(Object.keys(model.fp32.k).sort()).toEqual(['fp32-128', 'fp32-256'])
    expect(Object.keys(model.tensor.k)).toEqual(['tensor'])
    // a GeForce SM's FP32 lanes share their issue port: a smaller share of the datasheet than a V100/T4/A100 SM's
    expect(model.fp32.k['fp32-256']!).toBeLessThan(model.fp32.k['fp32-128']!)
  })

  it('comes out physically sensible: inside the grid, cost rising with process and less than in proportion with width', () => {
    // 0 or the grid's end (1.5) would mean the fit ran into a wall rather than found a minimum
    expect(model.processExponent).toBeGreaterThan(0.1)
    expect(model.processExponent).toBeLessThan(1)
    expect(model.widthExponent).toBeGreaterThan(0.1)
    expect(model.widthExponent).toBeLessThan(1)
    // at the knee a card holds about its boost clock: near its datasheet (GeForce boosts past the rated clock)
    for (const k of [...Object.values(model.fp32.k), ...Object.values(model.tensor.k)]) {
      expect(k).toBeGreaterThan(0.6)
      expect(k).toBeLessThan(1.3)
    }
  })

  it('puts the knee at the most power-rich measured card: no estimate goes past what was measured', () => {
    for (const axis of ['fp32', 'tensor'] as const) {
      const measured = targets.filter((t) => (t.measured ?? []).some((m) => m.method === 'matmul-best-of-sizes'))
      const ps = measured.map((t) => workPower(axis, t, model)).filter((p) => p !== null)
      expect(model[axis].knee).toBeCloseTo(Math.max(...ps), 9)
    }
  })

  it('reads the process each chip is made on', () => {
    expect(['v100_16g', 't4', '3090', 'a100_80g', '4090', 'h100_sxm_80g', 'b200'].map((k) => processNm(target(k)))).toEqual([12, 12, 8, 7, 4, 4, 4])
  })

  it('holds a card back by its power: a 70 W T4 below its class at the knee, a 72 W L4 below a 450 W RTX 4090', () => {
    const share = (t: Target) => estimateAchieved(t, model).fp32Tflops / t.fp32Tflops
    expect(workPower('fp32', target('t4'), model)!).toBeLessThan(model.fp32.knee)
    expect(share(target('t4'))).toBeLessThan(0.75 * model.fp32.k['fp32-128']!)
    expect(share(target('l4'))).toBeLessThan(share(target('4090')))
    // GeForce tensor work at half rate draws less power per datasheet FLOP: more p than a data-center Ada SM at like power
    expect(workPower('tensor', target('4090'), model)!).toBeGreaterThan(workPower('tensor', target('l40s'), model)!)
  })

  it('refuses no card: every target gets a positive FP32 estimate, and a tensor one wherever its datasheet has a figure', () => {
    for (const t of targets) {
      const estimate = estimateAchieved(t, model)
      expect(estimate.fp32Tflops).toBeGreaterThan(0)
      // the clock share is at most 1: no estimate above what its class reaches at the knee
      expect(estimate.fp32Tflops).toBeLessThanOrEqual(t.fp32Tflops * Math.max(...Object.values(model.fp32.k)) + 0.01)
      expect(estimate.tensorTflops === null).toBe(tensorDatasheet(t) === null)
      if (estimate.tensorTflops !== null) expect(estimate.tensorTflops).toBeGreaterThan(0)
      expect(Number.isFinite(estimate.copyGBs) && estimate.copyGBs > 0).toBe(true)
    }
  })

  it("marks a card without measurements as estimated, with how, and a measured card's reference as measured", () => {
    const l40 = target('l40').reference!
    expect(l40.fp32Tflops).toMatchObject({basis: 'estimated', method: 'matmul-best-of-sizes', source: expect.stringMatching(/^estimate: /)})
    expect(l40.fp32Tflops.value).toBe(estimateAchieved(target('l40'), model).fp32Tflops)
    expect(target('3090').reference!.fp32Tflops.basis).toBe('measured')
  })
})

describe('leave one out: each measured card estimated as if it had no measurement', () => {
  it('fits the model without the card it estimates', () => {
    const t4 = rows.find((r) => r.key === 't4')!
    const without = fitAchievedModel(targets.filter((t) => t.key !== 't4'))
    expect(t4.fp32!.estimate).toBe(estimateAchieved(target('t4'), without).fp32Tflops)
    expect(t4.fp32!.estimate).not.toBe(estimateAchieved(target('t4'), model).fp32Tflops)
  })

  it('covers every card with a measurement in the reference method', () => {
    const measured = targets.filter((t) => (t.measured ?? []).some((m) => m.method === 'matmul-best-of-sizes'))
    expect(rows.map((r) => r.key).sort()).toEqual(measured.map((t) => t.key).sort())
  })

  // The issue asks for 10% (FP32) and 20% (tensor) on every card. The published rows do not allow that for FP32: the
  // RTX 4060 and 4060 Ti rows measure 52-55% of FP32 datasheet where their siblings measure 66-70%, the T4 rows 54%
  // (achieved-model.ts lists the misses). These are the counts the model reaches (docs/fidelity.md shows the
  // table); a change that loses any fails here.
  it('lands within 10% FP32 on at least 22 of the 29 cards, and within 20% tensor on all 28', () => {
    const fp32 = rows.filter((r) => r.fp32 !== null)
    const tensor = rows.filter((r) => r.tensor !== null)
    expect([fp32.length, tensor.length]).toEqual([29, 28])
    expect(fp32.filter((r) => Math.abs(r.fp32!.errorPct) <= 10).length).toBeGreaterThanOrEqual(22)
    expect(tensor.filter((r) => Math.abs(r.tensor!.errorPct) <= 20).length).toBe(28)
  })

  it('misses by no more than 40% on any card', () => {
    for (const r of rows) {
      if (r.fp32) expect(Math.abs(r.fp32.errorPct)).toBeLessThan(40)
      if (r.tensor) expect(Math.abs(r.tensor.errorPct)).toBeLessThan(40)
    }
  })
})
