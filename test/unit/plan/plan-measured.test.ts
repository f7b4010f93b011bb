import type {Target} from '../../../src/catalog/types.js'
import {hostRatesOf, measuredAt, perSmTflops} from '../../../src/plan/measured-throughput.js'
import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {bf16TflopsAt, fp32TflopsAt, migBandwidthGBs} from '../../../src/plan/throughput.js'
import type {Plan, PlanHost} from '../../../src/plan/types.js'
import {builtinCatalog, hostModel, target} from './catalog-for-tests.js'

const model = hostModel('h200')
/** `plan --on h200`: an idle H200 with MPS, as a current driver has it. */
const h200: PlanHost = planHostFromModel(model, {mpsAvailable: true})
const rates = hostRatesOf(model)!

const measuredTargets = builtinCatalog().targets.filter((t) => t.reference?.fp32Tflops.basis === 'measured')

/** What the slice measures at `smCount` SMs and the plan's clock, from the host's rates alone. */
function measuredWith(plan: Plan, smCount: number) {
  return measuredAt(model, rates, smCount, plan.effectiveClockMHz, plan.measured!.expected.bandwidthGBs)
}

/** Half of what one TPC (2 SMs) more or less changes on the axis, at the plan's SMs and clock. */
function halfTpc(plan: Plan, axis: 'fp32Tflops' | 'bf16Tflops'): number {
  const up = measuredWith(plan, plan.smCount + 2)[axis] - measuredWith(plan, plan.smCount)[axis]
  const down = plan.smCount > 2 ? measuredWith(plan, plan.smCount)[axis] - measuredWith(plan, plan.smCount - 2)[axis] : up
  return Math.max(up, down) / 2
}

describe('the measured basis (the default)', () => {
  it('plans the 3090 against what it measures (24.6 FP32, 76.5 BF16), not its datasheet (35.6, 71.2)', () => {
    const plan = planCosplay(target('3090'), h200, 'bf16')
    expect(plan.basis).toBe('measured')
    expect(plan.measured!.target).toEqual({fp32Tflops: 24.625, bf16Tflops: 76.46, bandwidthGBs: 831})
    expect(plan.measured!.targetBasis).toEqual({fp32: 'measured', bf16: 'measured', bandwidth: 'measured'})
    expect(plan.weighed).toEqual([{axis: 'bf16', expected: plan.measured!.expected.bf16Tflops, target: 76.46, errorPct: plan.measured!.errors.bf16Pct}])
    // the datasheet side stays beside it
    expect(plan.target.bf16Tflops).toBe(71.2)
    expect(plan.expected.bf16Tflops).toBe(Math.round(bf16TflopsAt(model, plan.smCount, plan.effectiveClockMHz) * 10) / 10)
  })

  it("computes its expectation from its own SMs, clock and the host's rates, never from the target's figure", () => {
    const plan = planCosplay(target('3090'), h200, 'bf16')
    const perSm = perSmTflops(rates.curves.bf16!, plan.smCount) / perSmTflops(rates.curves.bf16!, model.smCount)
    const bf16 = bf16TflopsAt(model, plan.smCount, plan.effectiveClockMHz) * rates.fraction.bf16 * perSm
    const fp32 = fp32TflopsAt(model, plan.smCount, plan.effectiveClockMHz) * rates.fraction.fp32
    expect(plan.measured!.expected.bf16Tflops).toBeCloseTo(bf16, 1)
    expect(plan.measured!.expected.fp32Tflops).toBeCloseTo(fp32, 2)
    expect(plan.measured!.expected.bandwidthGBs).toBe(Math.round(migBandwidthGBs(model, plan.mig!.memorySlices) * rates.fraction.bandwidth))
    expect(plan.measured!.expected.bf16Tflops).not.toBe(plan.measured!.target.bf16Tflops)
    // a target that measured more would get more SMs; the same SMs keep the same expectation
    const faster = {...target('3090'), reference: {...target('3090').reference!, tensorTflops: {...target('3090').reference!.tensorTflops!, value: 90}}}
    const again = planCosplay(faster, h200, 'bf16')
    expect(again.smCount).toBeGreaterThan(plan.smCount)
    expect(measuredWith(again, plan.smCount).bf16Tflops).toBe(plan.measured!.expected.bf16Tflops)
  })

  it("the host's BF16 per SM follows the MPS sweep: more per SM with few SMs than with all 132", () => {
    expect(perSmTflops(rates.curves.bf16!, 10)).toBeGreaterThan(7)
    expect(perSmTflops(rates.curves.bf16!, 132)).toBeLessThan(6)
    expect(rates.fraction.bf16).toBeCloseTo(790.29 / 989.4, 4)
  })

  describe.each(['fp32', 'bf16'] as const)('--match %s', (objective) => {
    const axis = objective === 'fp32' ? 'fp32Tflops' : 'bf16Tflops'
    const cases = measuredTargets.filter((t) => (objective === 'fp32' ? true : t.reference!.tensorTflops?.basis === 'measured')).map((t) => [t.key] as const)

    it.each(cases)('%s: within 3%%, or half a TPC where whole TPCs cannot get closer, of what the card measures', (key) => {
      const t = target(key)
      const plan = planCosplay(t, h200, objective)
      const want = objective === 'fp32' ? t.reference!.fp32Tflops.value : t.reference!.tensorTflops!.value
      const whole = measuredAt(model, rates, model.smCount, model.clockMaxMHz, model.bandwidthGBs)[axis]
      const have = plan.measured!.expected[axis]
      expect(have).toBe(measuredWith(plan, plan.smCount)[axis])
      if (whole < want * 0.97) {
        // beyond this host: it gives everything it has (and warns past 10%)
        expect([plan.smCount, have]).toEqual([model.smCount, whole])
        return
      }
      expect(Math.abs(have - want)).toBeLessThanOrEqual(Math.max(0.03 * want, halfTpc(plan, axis)) + 1e-9)
    })
  })

  it("the 3090 at --match fp32 and bf16, the issue's case", () => {
    const fp32 = planCosplay(target('3090'), h200, 'fp32')
    expect(Math.abs(fp32.measured!.errors.fp32Pct)).toBeLessThanOrEqual(3)
    const bf16 = planCosplay(target('3090'), h200, 'bf16')
    // 10 SMs measure 72.4, 12 measure 87.6: whole TPCs cannot get closer to 76.5 than 10 SMs
    expect([bf16.smCount, bf16.measured!.expected.bf16Tflops]).toEqual([10, 72.4])
  })

  it('a target without measurements is planned on its estimate, and says so', () => {
    const plan = planCosplay(target('l40'), h200, 'fp32')
    expect(plan.measured!.targetBasis.fp32).toBe('estimated')
    expect(plan.basisNote).toMatch(/estimated/)
    expect(plan.warnings.some((w) => w.startsWith('Estimate:'))).toBe(true)
    expect(planCosplay(target('3090'), h200, 'fp32').warnings.some((w) => w.startsWith('Estimate:'))).toBe(false)
  })

  it('a calibration of this GPU moves the rates relative to the catalog figure in its own method', () => {
    const perf = model.measuredRates!.cosplayPerf!
    const peakBf16 = bf16TflopsAt(model, model.smCount, model.clockMaxMHz)
    // a calibration that measured what the catalog holds for this card changes nothing
    const same = hostRatesOf(model, {fractions: {fp32: null, bf16: perf.bf16Tflops! / peakBf16, bandwidth: null}, file: 'f', driver: 'd'})!
    expect(same.fraction.bf16).toBeCloseTo(rates.fraction.bf16, 6)
    // one that measured 10% less plans more SMs for the same target
    const slower = {fractions: {fp32: null, bf16: (0.9 * perf.bf16Tflops!) / peakBf16, bandwidth: null}, file: 'f', driver: 'd'}
    expect(hostRatesOf(model, slower)!.fraction.bf16).toBeCloseTo(0.9 * rates.fraction.bf16, 6)
    expect(planCosplay(target('4090'), {...h200, calibration: slower}, 'bf16').smCount).toBeGreaterThan(planCosplay(target('4090'), h200, 'bf16').smCount)
  })

  it('--datasheet keeps the datasheet matching', () => {
    const plan = planCosplay(target('t4'), h200, 'fp32', {}, {basis: 'datasheet'})
    expect(plan.basis).toBe('datasheet')
    expect(plan.weighed[0]).toMatchObject({axis: 'fp32', target: 8.1})
    expect(Math.abs(plan.errors.fp32Pct)).toBeLessThanOrEqual(3)
    // the measured figures are still shown beside it
    expect(plan.measured!.target.fp32Tflops).toBe(4.35)
  })

  it('a host model that names no card falls back to the datasheet basis, and says why', () => {
    const bare = {...h200, model: {...model, measuredRates: undefined}}
    const plan = planCosplay(target('3090'), bare, 'fp32')
    expect([plan.basis, plan.measured]).toEqual(['datasheet', null])
    expect(plan.basisNote).toMatch(/measuredAs/)
  })
})

describe('memory as the card has it', () => {
  const mem = (t: Target, host: PlanHost = h200) => planCosplay(t, host, 'balanced').memory!

  it('a 24 GB card (RTX 3090): the pinned limit is what the card reports to CUDA, 24268 MiB of 24576', () => {
    const plan = planCosplay(target('3090'), h200)
    expect(plan.mps!.pinnedMemLimitMiB).toBe(24268)
    expect(plan.memory).toMatchObject({vramMiB: 24576, cudaTotalMiB: 24268, cudaTotalBasis: 'measured', hardLimitMiB: 24268, hardLimitBy: 'mps'})
    // the context and library buffers come out of the limit, as they come out of the card's memory
    expect(plan.memory!.allocatableMiB).toBe(24268 - model.mpsClientOverheadMiB!.value)
    expect(plan.memory!.allocatorCapMiB).toBeLessThanOrEqual(plan.memory!.hardLimitMiB!)
  })

  it('a 4 GB card (GTX 1650): 3878 MiB of 4096, and a program gets what is left after its context', () => {
    const m = mem(target('1650'))
    expect([m.vramMiB, m.cudaTotalMiB, m.hardLimitMiB, m.allocatorCapMiB]).toEqual([4096, 3878, 3878, 3878])
    expect(m.allocatableMiB).toBe(3878 - 403)
  })

  it('a card whose CUDA total is not known starts from its VRAM, and says it assumed so', () => {
    const m = mem(target('4090'))
    expect([m.cudaTotalMiB, m.cudaTotalBasis, m.hardLimitMiB]).toEqual([24576, 'assumed', 24576])
  })

  it("moves the limit by the card's context against this host's MPS client where both are known", () => {
    const t = target('3090')
    const withContext = {
      ...t,
      reference: {...t.reference!, contextMiB: {value: 300, basis: 'measured' as const, method: 'device-properties' as const, source: 'test'}},
    }
    const m = mem(withContext)
    // a program on the card gets 24268 - 300; here it gets the limit less this host's 403
    expect(m.hardLimitMiB).toBe(24268 - 300 + 403)
    expect(m.allocatableMiB).toBe(24268 - 300)
  })

  it('never sets a limit above the slice', () => {
    const m = mem(target('t4'))
    expect(m.hardLimitMiB).toBe(15095)
    expect(m.hardLimitMiB!).toBeLessThanOrEqual(16 * 1024)
  })

  it('without MPS the costume caps the allocator at the card less a context, and only the MIG slice is hard', () => {
    const noMps = planHostFromModel(model, {mpsAvailable: false})
    const plan = planCosplay(target('3090'), noMps)
    expect(plan.mps).toBeNull()
    expect(plan.memory).toMatchObject({hardLimitBy: 'mig-slice', allocatorCapMiB: 24268 - 403, allocatableMiB: 24268 - 403})
    expect(plan.memory!.hardLimitMiB).toBe(Math.round(plan.mig!.memoryGiB * 1024))
    expect(plan.warnings.some((w) => /costume enforces it/.test(w))).toBe(true)
  })
})
