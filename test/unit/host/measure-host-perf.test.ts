import {describe, expect, it} from '@jest/globals'

import type {ExecResult, Executor} from '../../../src/core/executor.js'
import {measureHostPerf} from '../../../src/host/measure-host-perf.js'
import {ScriptedExecutor} from '../support/scripted-executor.js'
import {rejected} from '../support/thrown.js'

const OPTIONS = {python: 'python3', script: '/opt/x/gpu_cosplay_perf.py', gpuIndex: 1, gpuUuid: 'GPU-abc'}
const measurement = (kind: 'cuda' | 'cpu') =>
  JSON.stringify({
    schema: 1,
    device: {name: 'NVIDIA H100 80GB HBM3', kind, driver: '550.90.12'},
    axes: {
      fp32: {measured: 51, unit: 'TFLOPS'},
      bf16: {measured: 780, unit: 'TFLOPS'},
      bandwidth: {measured: 3000, unit: 'GB/s'},
      vram: {measured: null, unit: 'GiB', skipped: 'not asked (--no-vram)'},
    },
    samples: {source: null, count: 0, rows: []},
    elapsedS: 8,
  })

const failure = (executor: Executor) => rejected(measureHostPerf(executor, OPTIONS))

describe('measureHostPerf', () => {
  it('runs the script on the GPU named by UUID, without the VRAM probe', async () => {
    const executor = new ScriptedExecutor({stdout: measurement('cuda')})
    const m = await measureHostPerf(executor, OPTIONS)
    expect(m.axes.bf16.measured).toBe(780)
    expect(executor.calls[0].argv).toEqual(['python3', '/opt/x/gpu_cosplay_perf.py', '--device', 'cuda', '--no-vram', '--smi-id', 'GPU-abc'])
    expect(executor.calls[0].options?.env).toEqual({CUDA_VISIBLE_DEVICES: 'GPU-abc'})
  })

  it("unsets the caller's MPS, allocator and costume settings and passes the nvidia-smi to sample with", async () => {
    const executor = new ScriptedExecutor({stdout: measurement('cuda')})
    const callerEnv = {HOME: '/root', CUDA_MPS_PIPE_DIRECTORY: '/x', PYTORCH_CUDA_ALLOC_CONF: 'a', GPU_COSPLAY_VRAM_MIB: '1', CUDA_VISIBLE_DEVICES: '3'}
    await measureHostPerf(executor, {...OPTIONS, callerEnv, smiPath: '/sim/nvidia-smi'})
    expect(executor.calls[0].options?.env).toEqual({
      CUDA_MPS_PIPE_DIRECTORY: undefined,
      PYTORCH_CUDA_ALLOC_CONF: undefined,
      GPU_COSPLAY_VRAM_MIB: undefined,
      CUDA_VISIBLE_DEVICES: 'GPU-abc',
    })
    expect(executor.calls[0].argv.slice(-2)).toEqual(['--smi', '/sim/nvidia-smi'])
  })

  it.each([
    ['a missing interpreter', new Error('spawn python3 ENOENT'), 'PYTHON_NOT_FOUND'],
    ['a run past the time limit', {timedOut: true, exitCode: 124}, 'PERF_TIMEOUT'],
    ['no torch', {exitCode: 3, stdout: '{"error": {"code": "NO_TORCH", "message": "torch is not importable"}}'}, 'PERF_NO_TORCH'],
    ['no CUDA', {exitCode: 3, stdout: '{"error": {"code": "NO_CUDA", "message": "no CUDA device"}}'}, 'CALIBRATE_NO_CUDA'],
    ['a CPU result', {stdout: measurement('cpu')}, 'CALIBRATE_NO_CUDA'],
    ['a crash', {exitCode: 1, stderr: 'Traceback\nRuntimeError: CUDA error'}, 'PERF_MEASURE_FAILED'],
  ])('turns %s into one error', async (_, answer, code) => {
    const error = await failure(new ScriptedExecutor(answer as Partial<ExecResult> | Error))
    expect([error.code, error.exit]).toEqual([code, 3])
  })
})
