import {bf16TflopsAt, fp32TflopsAt, migBandwidthGBs, supportedClocksMHz} from '../../../src/plan/throughput.js'
import {hostModel} from './catalog-for-tests.js'

// Datasheet figures the per-SM model must reproduce (per-SM rates as in ARCHITECTURE.md and catalog/hosts.yaml).
describe('throughput model', () => {
  it.each([
    ['h200', 132, 1980, 66.9, 989.4],
    ['h100-sxm', 132, 1980, 66.9, 989.4],
    ['a100-80g', 108, 1410, 19.5, 311.9],
    ['a30', 56, 1440, 10.3, 165.2],
    ['l40s', 142, 2520, 91.6, null],
  ])('%s: %d SMs at %d MHz', (host, sms, clockMHz, fp32, bf16) => {
    const model = hostModel(host)
    expect(fp32TflopsAt(model, sms, clockMHz)).toBeCloseTo(fp32, 0)
    if (bf16 !== null) expect(bf16TflopsAt(model, sms, clockMHz)).toBeCloseTo(bf16, 0)
  })

  it('counts an FMA once, not twice (the Python original doubled it)', () => {
    expect(fp32TflopsAt(hostModel('h200'), 132, 1980)).toBeLessThan(70)
  })

  it('gives MIG bandwidth by memory slices, not SMs', () => {
    const h200 = hostModel('h200')
    expect(migBandwidthGBs(h200, 1)).toBeCloseTo(600)
    expect(migBandwidthGBs(h200, 4)).toBeCloseTo(2400)
    expect(migBandwidthGBs(hostModel('a30'), 1)).toBeCloseTo(hostModel('a30').bandwidthGBs / 4)
  })

  it('steps clocks 15 MHz down from the maximum', () => {
    expect(supportedClocksMHz({min: 345, max: 1980})).toHaveLength(110)
    expect(supportedClocksMHz({min: 345, max: 1980}).at(-1)).toBe(345)
  })
})
