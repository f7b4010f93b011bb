import type {HostModel, Target} from '../../../src/catalog/types.js'
import {planCosplay as planInBasis} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {fp32TflopsAt} from '../../../src/plan/throughput.js'
import type {Objective, PlanConstraints, PlanHost} from '../../../src/plan/types.js'
import {thrown} from '../support/thrown.js'
import {builtinCatalog, hostModel, target} from './catalog-for-tests.js'

const MIG_HOSTS = ['h200', 'h100-sxm', 'h100-pcie', 'a100-80g', 'a100-40g', 'a30']

// The planner's physics against datasheets, as before the measured basis (plan --datasheet keeps it);
// test/unit/plan/plan-measured.test.ts holds the default, measured basis.
const planCosplay = (t: Target, host: PlanHost, objective: Objective = 'balanced', constraints: PlanConstraints = {}) =>
  planInBasis(t, host, objective, constraints, {basis: 'datasheet'})

/** Can some profile that holds the target's VRAM reach its FP32 within the host's clock range? */
function fp32Reachable(t: Target, model: HostModel): boolean {
  const fitting = (model.mig?.profiles ?? []).filter((p) => p.memoryGiB >= t.vramGB)
  return fitting.some(
    (p) => fp32TflopsAt(model, p.smCount, model.clockMaxMHz) >= t.fp32Tflops * 0.97 && fp32TflopsAt(model, p.smCount, model.clockMinMHz) <= t.fp32Tflops * 1.03,
  )
}

function withFree(host: PlanHost, free: Record<string, number>): PlanHost {
  return {...host, profiles: host.profiles!.map((p) => ({...p, free: free[p.name] ?? 0}))}
}

describe('planCosplay --match fp32', () => {
  const cases = MIG_HOSTS.flatMap((h) => builtinCatalog().targets.map((t) => [h, t.key] as const))

  it.each(cases)('on %s, %s: FP32 within 3%% whenever a fitting slice can reach it', (h, key) => {
    const model = hostModel(h)
    const t = target(key)
    const plan = planCosplay(t, planHostFromModel(model), 'fp32')
    if (fp32Reachable(t, model)) expect(Math.abs(plan.errors.fp32Pct)).toBeLessThanOrEqual(3)
    if (plan.mig && model.mig!.profiles.some((p) => p.memoryGiB >= t.vramGB)) expect(plan.mig.memoryGiB).toBeGreaterThanOrEqual(t.vramGB)
    expect(plan.vramCapGiB).toBeLessThanOrEqual(t.vramGB)
  })

  it('reaches FP32 for most targets on an H200 (the model is not vacuous)', () => {
    const reachable = builtinCatalog().targets.filter((t) => fp32Reachable(t, hostModel('h200')))
    expect(reachable.length).toBeGreaterThan(30)
  })
})

describe('planCosplay on an H200 model', () => {
  const h200 = planHostFromModel(hostModel('h200'))

  it('plans a T4 on a 1g slice at full clock: 16 SMs x 256 x 1.98 GHz is its 8.1 TFLOPS', () => {
    const plan = planCosplay(target('t4'), h200, 'fp32')
    expect(plan.mig?.profile).toMatch(/^1g\./)
    expect(plan.clockMHz).toBeNull()
    expect(Math.abs(plan.errors.fp32Pct)).toBeLessThanOrEqual(3)
    expect(plan.vramCapGiB).toBe(16)
    expect(plan.vramCapMiB).toBe(16384)
  })

  it('locks the clock below the maximum for a slower card (GTX 1650 on a 1g slice)', () => {
    const plan = planCosplay(target('1650'), h200, 'fp32')
    expect(plan.mig?.profile).toMatch(/^1g\./)
    expect(plan.clockMHz).toBeGreaterThan(600)
    expect(plan.clockMHz!).toBeLessThan(850)
    expect(Math.abs(plan.errors.fp32Pct)).toBeLessThanOrEqual(3)
    expect(plan.vramCapGiB).toBe(4)
  })

  it('caps power at the target TDP clamped into the host range, and says so when clamped', () => {
    expect(planCosplay(target('3090'), h200).powerLimitW).toBe(350)
    const t4 = planCosplay(target('t4'), h200)
    expect(t4.powerLimitW).toBe(200)
    expect(t4.warnings.some((w) => w.startsWith('Power:'))).toBe(true)
  })

  it('warns that Turing has no BF16 and leaves the BF16 error empty', () => {
    const plan = planCosplay(target('2080 ti'), h200)
    expect(plan.errors.bf16Pct).toBeNull()
    expect(plan.warnings.some((w) => w.startsWith('BF16: the target'))).toBe(true)
  })

  it('warns, with numbers, that Hopper BF16 is too strong for a GeForce target', () => {
    const plan = planCosplay(target('3090'), h200, 'fp32')
    expect(plan.errors.bf16Pct!).toBeGreaterThan(100)
    expect(plan.warnings.find((w) => w.startsWith('BF16 tensor'))).toContain(String(plan.expected.bf16Tflops))
  })

  it('trades axes by objective: --match bf16 gets BF16 closer than --match fp32 does', () => {
    const byBf16 = planCosplay(target('3090'), h200, 'bf16')
    const byFp32 = planCosplay(target('3090'), h200, 'fp32')
    expect(Math.abs(byBf16.errors.bf16Pct!)).toBeLessThan(Math.abs(byFp32.errors.bf16Pct!))
    expect(Math.abs(byBf16.errors.bf16Pct!)).toBeLessThanOrEqual(5)
    expect(Math.abs(byFp32.errors.fp32Pct)).toBeLessThan(Math.abs(byBf16.errors.fp32Pct))
  })

  it('--match bandwidth picks the slice whose memory share is closest', () => {
    const plan = planCosplay(target('3090'), h200, 'bandwidth')
    // 936 GB/s: two of eight 600 GB/s slices (1200) beat four (2400)
    expect(plan.mig?.memorySlices).toBe(2)
  })

  it('uses the largest slice and warns when the target has more VRAM than any slice', () => {
    const plan = planCosplay(target('b200'), h200)
    expect(plan.mig?.memorySlices).toBe(8)
    expect(plan.warnings.some((w) => w.startsWith('VRAM:'))).toBe(true)
  })

  it('chooses only among free profiles and fails cleanly when none that fits is free', () => {
    const only3g = withFree(h200, {'3g.71gb': 1, '1g.18gb': 3})
    expect(planCosplay(target('3090'), only3g).mig?.profile).toBe('3g.71gb')
    expect(thrown(() => planCosplay(target('3090'), withFree(h200, {'1g.18gb': 3}))).code).toBe('MIG_NO_FREE_SLOT')
  })

  it('plans with a clock another session holds, and says so', () => {
    const plan = planCosplay(target('t4'), h200, 'fp32', {clockMHz: 1200})
    expect(plan.effectiveClockMHz).toBe(1200)
    expect(plan.clockMHz).toBe(1200)
    expect(plan.warnings.some((w) => w.includes('1200 MHz'))).toBe(true)
    const unlocked = planCosplay(target('t4'), h200, 'fp32', {clockMHz: null})
    expect(unlocked.clockMHz).toBeNull()
    expect(unlocked.effectiveClockMHz).toBe(1980)
  })

  it('marks that MIG mode must be enabled when the GPU has it off', () => {
    expect(planCosplay(target('t4'), {...h200, migEnabled: false}).needsMigEnable).toBe(true)
    expect(planCosplay(target('t4'), h200).needsMigEnable).toBe(false)
  })

  it('is pure: same input, same plan; the input is not changed', () => {
    const frozen = Object.freeze({...h200, profiles: Object.freeze(h200.profiles!.map((p) => Object.freeze({...p})))})
    expect(planCosplay(target('4090'), frozen)).toEqual(planCosplay(target('4090'), frozen))
  })
})

describe('planCosplay without MIG', () => {
  it('uses the whole L40S with a clock lock, a power cap and a VRAM cap, and says MIG is unavailable', () => {
    const plan = planCosplay(target('3090'), planHostFromModel(hostModel('l40s')), 'fp32')
    expect(plan.mig).toBeNull()
    expect(plan.needsMigEnable).toBe(false)
    expect(plan.smCount).toBe(142)
    expect(Math.abs(plan.errors.fp32Pct)).toBeLessThanOrEqual(3)
    expect(plan.vramCapGiB).toBe(24)
    expect(plan.warnings[0]).toMatch(/^MIG is not available/)
  })

  it('falls back to the whole GPU when a MIG-capable host cannot use MIG now', () => {
    const host = {...planHostFromModel(hostModel('h200')), profiles: null, migUnavailableReason: 'MIG mode is pending a GPU reset'}
    const plan = planCosplay(target('t4'), host)
    expect(plan.mig).toBeNull()
    expect(plan.warnings[0]).toContain('pending a GPU reset')
  })
})
