import {estimateAchieved, fitAchievedModel, leaveOneOut, powerPerSmGHz} from '../../../src/catalog/achieved-model.js'
import type {Target} from '../../../src/catalog/types.js'
import {builtinCatalog, target} from '../plan/catalog-for-tests.js'

const targets = builtinCatalog().targets
const model = fitAchievedModel(targets)
const rows = leaveOneOut(targets)

describe('the estimate of what a card measures, from its datasheet', () => {
  it('is fitted on the measured cards: a knee in W per SM-GHz and, per class, what cuBLAS reaches when power is no limit', () => {
    expect(model.fp32.cards).toBeGreaterThanOrEqual(25)
    expect(model.tensor.cards).toBeGreaterThanOrEqual(25)
    expect(Object.keys(model.fp32.k).sort()).toEqual(['fp32-128', 'fp32-256'])
    expect(Object.keys(model.tensor.k).sort()).toEqual(['tensor-full-rate', 'tensor-half-rate'])
    // a GeForce SM's FP32 lanes share their issue port: a smaller share of the datasheet than a V100/T4/A100 SM's
    expect(model.fp32.k['fp32-256']!).toBeLessThan(model.fp32.k['fp32-128']!)
  })

  it('holds a card back by its power: a 70 W T4 below its unconstrained class, a 72 W L4 below a 450 W RTX 4090', () => {
    const share = (t: Target) => estimateAchieved(t, model).fp32Tflops / t.fp32Tflops
    expect(powerPerSmGHz('fp32', target('t4'))!).toBeLessThan(model.fp32.kneeWPerSmGHz)
    expect(share(target('t4'))).toBeLessThan(0.75 * model.fp32.k['fp32-128']!)
    expect(share(target('l4'))).toBeLessThan(share(target('4090')))
    // GeForce tensor work at half rate draws less power per datasheet FLOP: it holds its clock
    expect(estimateAchieved(target('4090'), model).tensorTflops! / target('4090').bf16Tflops!).toBeGreaterThan(1)
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

  // The issue asks for 10% (FP32) and 20% (tensor) on every card. The published rows do not allow that: the RTX 4060
  // and 4060 Ti rows measure 52-55% of FP32 datasheet where their siblings measure 70%, the T4 rows 54%. These are the
  // counts the model reaches (README and docs/fidelity.md show the table); a change that loses any fails here.
  it('lands within 10% FP32 on at least 20 of the 29 cards, and within 20% tensor on at least 26 of 28', () => {
    const fp32 = rows.filter((r) => r.fp32 !== null)
    const tensor = rows.filter((r) => r.tensor !== null)
    expect([fp32.length, tensor.length]).toEqual([29, 28])
    expect(fp32.filter((r) => Math.abs(r.fp32!.errorPct) <= 10).length).toBeGreaterThanOrEqual(20)
    expect(tensor.filter((r) => Math.abs(r.tensor!.errorPct) <= 20).length).toBeGreaterThanOrEqual(26)
  })
})
