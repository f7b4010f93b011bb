import {describe, expect, it} from '@jest/globals'

import {type VerifyPerfResult, verifyPerf} from '../../../src/measure/verify-perf.js'
import type {SessionAccess} from '../../../src/client/session-access.js'
import {renderVerifyPerf} from '../../../src/render/render-verify.js'
import type {CosplayError} from '../../../src/core/errors.js'
import {perfReport} from '../../../src/plan/perf-verdict.js'
import type {PerfMeasurement} from '../../../src/host/perf-measurement.js'

const EXPECTATIONS = {
  hostModel: 'h200_sxm',
  targetKey: 'rtx_3090',
  peak: {fp32Tflops: 13.18, bf16Tflops: 194.9, bandwidthGBs: 1200, vramGiB: 24},
  target: {fp32Tflops: 35.58, bf16Tflops: 71.2, bandwidthGBs: 936, vramGB: 24},
}

function result(kind: 'cuda' | 'cpu'): VerifyPerfResult {
  const m = {
    schema: 1,
    device: {name: kind === 'cpu' ? 'AMD EPYC' : 'NVIDIA GeForce RTX 3090', kind, driver: kind === 'cpu' ? null : '550.90.12'},
    axes: {
      fp32: {measured: kind === 'cpu' ? 0.007 : 10.3, unit: 'TFLOPS'},
      bf16: {measured: kind === 'cpu' ? 0.3 : 150, unit: 'TFLOPS'},
      bandwidth: {measured: kind === 'cpu' ? 40.5 : 1070, unit: 'GB/s'},
      vram:
        kind === 'cpu'
          ? {measured: null, unit: 'GiB', skipped: 'CPU run'}
          : {
              measured: 23.875,
              unit: 'GiB',
              capGiB: 24,
              underCapOk: true,
              overCapRefused: false,
              hard: false,
              hardReason: 'the driver granted 64 MiB past the limit',
            },
    },
    samples:
      kind === 'cpu'
        ? {source: null, count: 0, rows: [], reason: 'no nvidia-smi on PATH'}
        : {
            source: 'nvidia-smi',
            count: 1,
            rows: [{smClockMHz: 1980}],
            summary: {smClockMHz: {min: 1980, median: 1980, max: 1980}, powerW: null, throttleReasons: []},
          },
    elapsedS: 3,
  } as PerfMeasurement
  const report = perfReport(m, EXPECTATIONS, kind === 'cpu' ? null : {fp32: 0.78, bf16: 0.8, bandwidth: 0.9})
  return {session: 's1', ...report, calibration: null, summary: {PASS: 0, WARN: 0, FAIL: 0, SKIP: 0}}
}

describe('renderVerifyPerf', () => {
  it('labels a CPU run and keeps its small figures readable', () => {
    const text = renderVerifyPerf(result('cpu'))
    expect(text).toContain('CPU (measured on purpose, --cpu): AMD EPYC')
    expect(text).toMatch(/FP32 GEMM TFLOPS\s+0\.007\s+13\.2\s+-\s+[-\d.]+\s+35\.6\s+SKIP/)
    expect(text).toContain('samples: none (no nvidia-smi on PATH)')
  })

  it('shows every column and says when the cap is not enforced', () => {
    const text = renderVerifyPerf(result('cuda'))
    expect(text).toMatch(/AXIS\s+MEASURED\s+PEAK\s+CALIBRATED\s+EXPECTED\s+TARGET\s+VERDICT\s+CARD\s+VS CARD/)
    expect(text).toMatch(/BF16 GEMM TFLOPS\s+150\.0\s+194\.9\s+155\.9\s+[-\d.]+\s+71\.2\s+PASS/)
    expect(text).toMatch(/VRAM GiB usable\s+23\.88\s+24\.00\s+24\.00\s+[-\d.]+\s+24\.00\s+FAIL/)
    expect(text).toContain('1 GiB more is ALLOWED')
    expect(text).toContain('enforced by the driver: no (library-level cap) - the driver granted 64 MiB past the limit')
  })
})

describe('verifyPerf when the session cannot use its GPU', () => {
  const access = {container: {name: 'gpu-cosplay-s1', session: 's1'}} as unknown as SessionAccess
  it.each([
    ['NO_CUDA', 'CUDA could not be used: CUDA initialisation failed: MPS client failed to connect', 'PERF_NO_CUDA'],
    ['DEVICE_OPEN', 'opening the CUDA device failed at mem_get_info: CUDA error', 'PERF_DEVICE_OPEN'],
    ['PERF_UNEXPECTED', 'the measurement failed at vram: ZeroDivisionError', 'PERF_MEASURE_FAILED'],
  ])('turns %s into one failed check (exit 1) with the reason', async (code, message, expected) => {
    const ran = {exitCode: 3, stdout: JSON.stringify({error: {code, message}}), stderr: ''}
    const error = (await verifyPerf(access, ran).catch((error_: unknown) => error_)) as CosplayError
    expect([error.code, error.exit]).toEqual([expected, 1])
    expect(error.message).toContain(message)
  })
})
