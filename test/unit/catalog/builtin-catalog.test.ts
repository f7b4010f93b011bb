import fs from 'node:fs'
import {fileURLToPath} from 'node:url'

import {load} from 'js-yaml'

import {loadCatalog} from '../../../src/catalog/load-catalog.js'
import type {Target} from '../../../src/catalog/types.js'

const builtinDir = fileURLToPath(new URL('../../../catalog', import.meta.url))
const referenceDir = fileURLToPath(new URL('../../fixtures/reference', import.meta.url))

type ReferenceCard = Record<string, unknown> & {key: string}
const reference = load(fs.readFileSync(`${referenceDir}/gpus.yaml`, 'utf8')) as {cards: ReferenceCard[]}
const catalog = loadCatalog({builtinDir, userDirs: []})
const byKey = new Map(catalog.targets.map((t) => [t.key, t]))

function within(actual: number, expected: number, tolerance: number): boolean {
  return Math.abs(actual - expected) <= tolerance * Math.abs(expected)
}

describe('built-in targets', () => {
  it('holds at least 60 targets, every reference card among them', () => {
    expect(catalog.targets.length).toBeGreaterThanOrEqual(60)
    expect(reference.cards.map((c) => c.key).filter((key) => !byKey.has(key))).toEqual([])
  })

  const required = [
    't4',
    'v100_16g',
    'v100_32g',
    'a10',
    'a30',
    'a40',
    'a100_40g',
    'a100_80g',
    'l4',
    'l40',
    'l40s',
    'h100_pcie_80g',
    'h100_sxm_80g',
    'h100_nvl',
    'h200_sxm_141g',
    'b200',
    'rtx_a4000',
    'rtx_a5000',
    'rtx_a6000',
    'rtx_4000_ada',
    'rtx_5000_ada',
    'rtx_6000_ada',
  ]
  const consumer = reference.cards.map((c) => c.key).filter((key) => /^(gtx_16|rtx_[2-5]0[5-9]0)/.test(key))
  it.each([...required, ...consumer])('has %s', (key) => {
    expect(byKey.has(key)).toBe(true)
  })

  it('covers every GTX 16 / RTX 20 / 30 / 40 / 50 card of the reference', () => {
    expect(consumer.length).toBeGreaterThanOrEqual(35)
  })

  const fields: Array<[keyof Target, string]> = [
    ['smCount', 'sm_count'],
    ['vramGB', 'vram_gb'],
    ['bandwidthGBs', 'bandwidth_gbs'],
    ['fp32Tflops', 'fp32_tflops'],
    ['bf16Tflops', 'bf16_tc_tflops'],
    ['tdpW', 'tdp_w'],
  ]
  it.each(reference.cards.map((c) => [c.key, c] as const))('%s agrees with the reference within 5%%', (key, card) => {
    const target = byKey.get(key)!
    for (const [field, refField] of fields) {
      const expected = card[refField] as number | null
      const actual = target[field] as number | null
      if (refField === 'bf16_tc_tflops' && expected === null) {
        expect({key, field, actual}).toEqual({key, field, actual: null})
        continue
      }
      // The reference leaves a few required numbers open (GB200 SMs, GH200 TDP); the catalog explains its fill in notes.
      if (expected === null) {
        expect(target.notes).toBeDefined()
        continue
      }
      expect({key, field, ok: within(actual!, expected, 0.05)}).toEqual({key, field, ok: true})
    }
  })

  it.each(catalog.targets.map((t) => [t.key, t] as const))('%s: FP32 = SMs x FLOPs/SM/clk x boost within 3%%', (key, target) => {
    // 64 FP32 lanes per SM on Volta, Turing and GA100; 128 on everything since GA10x.
    const isNarrowSm = target.arch === 'volta' || target.arch === 'turing' || target.chip === 'GA100'
    const flopsPerSmClk = isNarrowSm ? 128 : 256
    const modelTflops = (target.smCount * flopsPerSmClk * target.boostClockMHz) / 1e6
    expect({key, ok: within(modelTflops, target.fp32Tflops, 0.03)}).toEqual({key, ok: true})
  })

  it('has no BF16 on Volta or Turing, and BF16 everywhere else', () => {
    for (const target of catalog.targets) {
      const hasBf16 = target.bf16Tflops !== null
      expect({key: target.key, hasBf16}).toEqual({key: target.key, hasBf16: target.arch !== 'volta' && target.arch !== 'turing'})
    }
  })

  it('has a source on every entry and distinct keys', () => {
    expect(catalog.targets.every((t) => t.source.length > 0)).toBe(true)
    expect(new Set(catalog.targets.map((t) => t.key)).size).toBe(catalog.targets.length)
  })
})

describe('built-in host models', () => {
  const hostKeys = catalog.hosts.map((h) => h.key)

  it('has the MIG hosts and the L40S', () => {
    expect(hostKeys).toEqual(expect.arrayContaining(['h200_sxm', 'h100_sxm', 'h100_pcie', 'h100_nvl', 'a100_40g', 'a100_80g', 'a30', 'gh200_96g', 'l40s']))
    expect(catalog.hosts.find((h) => h.key === 'l40s')!.mig).toBeNull()
  })

  it.each(catalog.hosts.map((h) => [h.key, h] as const))('%s has a sane profile table and ranges', (key, host) => {
    expect(host.clockMinMHz).toBeLessThan(host.clockMaxMHz)
    expect(host.powerMinW).toBeLessThanOrEqual(host.powerDefaultW)
    expect(host.powerDefaultW).toBeLessThanOrEqual(host.powerMaxW)
    if (host.tensorClockMaxMHz !== null) expect(host.tensorClockMaxMHz).toBeLessThanOrEqual(host.clockMaxMHz)
    if (!host.mig) return
    const ids = new Set<number>()
    for (const p of host.mig.profiles) {
      const row = {key, profile: p.name}
      expect({...row, ok: p.memorySlices <= host.mig.memorySlices}).toEqual({...row, ok: true})
      expect({...row, ok: p.maxInstances >= 1 && p.maxInstances * p.memorySlices <= host.mig.memorySlices}).toEqual({...row, ok: true})
      expect({...row, ok: p.maxInstances * p.memoryGiB <= host.memoryGiB}).toEqual({...row, ok: true})
      expect({...row, ok: p.smCount <= host.smCount}).toEqual({...row, ok: true})
      expect({...row, ok: Number(p.name.split('g.')[0]) <= host.mig.computeSlices}).toEqual({...row, ok: true})
      expect(ids.has(p.id)).toBe(false)
      ids.add(p.id)
    }
    // The full-GPU profile owns every memory slice.
    expect(host.mig.profiles.some((p) => p.memorySlices === host.mig!.memorySlices && p.maxInstances === 1)).toBe(true)
  })

  it('carries the H200 -lgip values', () => {
    const h200 = catalog.hosts.find((h) => h.key === 'h200_sxm')!
    const memory = Object.fromEntries(h200.mig!.profiles.map((p) => [p.name, p.memoryGiB]))
    expect(memory).toMatchObject({'1g.18gb': 16, '1g.18gb+me': 16, '2g.35gb': 32.5, '7g.141gb': 140})
    expect(h200.mig!.profiles.find((p) => p.name === '1g.18gb')).toMatchObject({id: 19, smCount: 16, memorySlices: 1, maxInstances: 7})
  })

  it('models per-SM rates so the datasheet peaks come out', () => {
    const peak = (key: string) => {
      const h = catalog.hosts.find((x) => x.key === key)!
      return {
        fp32: (h.smCount * h.fp32FlopsPerSmClk * h.clockMaxMHz) / 1e6,
        bf16: (h.smCount * h.bf16FlopsPerSmClk * (h.tensorClockMaxMHz ?? h.clockMaxMHz)) / 1e6,
      }
    }
    const cases: Array<[string, number, number]> = [
      ['h200_sxm', 66.9, 989.4],
      ['h100_sxm', 66.9, 989.4],
      ['h100_pcie', 51.2, 756],
      ['h100_nvl', 60, 835.5],
      ['a100_40g', 19.5, 312],
      ['a30', 10.3, 165],
      ['l40s', 91.6, 362],
    ]
    for (const [key, fp32, bf16] of cases) {
      const p = peak(key)
      expect({key, fp32: within(p.fp32, fp32, 0.02), bf16: within(p.bf16, bf16, 0.02)}).toEqual({key, fp32: true, bf16: true})
    }
  })
})
