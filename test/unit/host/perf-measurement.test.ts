import {readFileSync} from 'node:fs'

import {parsePerfOutput} from '../../../src/host/perf-measurement.js'

const MEASURED = {
  schema: 1,
  device: {name: 'AMD EPYC', kind: 'cpu', driver: null, torch: '1.13.0a0'},
  sizes: {gemmN: {fp32: 384, bf16: 384}},
  axes: {
    fp32: {measured: 0.007, unit: 'TFLOPS', n: 384},
    bf16: {measured: 0.3, unit: 'TFLOPS', n: 384},
    bandwidth: {measured: 40.5, unit: 'GB/s', bytes: 33554432},
    vram: {measured: null, unit: 'GiB', skipped: 'CPU run: no device memory cap to probe'},
  },
  samples: {source: null, realValues: false, fields: null, count: 0, rows: [], reason: 'no nvidia-smi on PATH'},
  elapsedS: 2.3,
}

describe('parsePerfOutput', () => {
  it('reads a measurement, keeping the extra diagnostics', () => {
    const out = parsePerfOutput(JSON.stringify(MEASURED))
    expect(out?.kind).toBe('measured')
    if (out?.kind !== 'measured') return
    expect(out.measurement.device.kind).toBe('cpu')
    expect(out.measurement.axes.fp32).toMatchObject({measured: 0.007, n: 384})
  })

  it('reads the refusals the script explains', () => {
    expect(parsePerfOutput('{"error": {"code": "NO_CUDA", "message": "no CUDA device visible to torch"}}')).toEqual({
      kind: 'refused',
      code: 'NO_CUDA',
      message: 'no CUDA device visible to torch',
    })
  })

  it.each([
    ['not JSON', 'Traceback (most recent call last):'],
    ['verify.py checks (an image from before --perf)', '{"checks": [], "summary": {}}'],
    ['an unknown device kind', JSON.stringify({...MEASURED, device: {...MEASURED.device, kind: 'rocm'}})],
    ['a missing axis', JSON.stringify({...MEASURED, axes: {...MEASURED.axes, bf16: undefined}})],
  ])('returns null for %s', (_, text) => {
    expect(parsePerfOutput(text)).toBeNull()
  })
})

// What the measurement printed on a real H200 (driver 580.159.04, 2026-11-26, bench/gpu/device-check.sh): the whole
// GPU, and a client of an MPS daemon of its own at 50% with a 16 GiB pinned limit.
describe('a real GPU measurement', () => {
  const read = (name: string) => parsePerfOutput(readFileSync(`test/fixtures/perf/${name}`, 'utf8'))

  it('reads the whole-GPU run, its power-capped samples included', () => {
    const out = read('h200-whole-gpu.json')
    if (out?.kind !== 'measured') throw new Error(`not read: ${JSON.stringify(out)}`)
    const m = out.measurement
    expect(m.device).toMatchObject({name: 'NVIDIA H200', kind: 'cuda', driver: '580.159.04'})
    expect(m.axes.bf16.measured).toBeGreaterThan(600)
    expect(m.axes.bandwidth.measured).toBeGreaterThan(4000)
    expect(m.axes.vram.measured).toBeGreaterThan(139)
    expect(m.samples.summary?.throttleReasons).toEqual(['sw_power_cap'])
  })

  it('reads the MPS client: half the SMs, the pinned limit as the memory it can have', () => {
    const out = read('h200-mps50-pinned16g.json')
    if (out?.kind !== 'measured') throw new Error(`not read: ${JSON.stringify(out)}`)
    const m = out.measurement
    expect(m.device.smCount).toBe(66)
    expect(m.axes.vram.measured).toBeGreaterThan(15)
    expect(m.axes.vram.measured).toBeLessThan(16)
  })
})
