/**
 * calibrate and plan's achievable column against the simulator. No GPU here: GPU_COSPLAY_PYTHON points
 * calibrate at a stand-in for the measurement script (test/cli/support/fake-perf-python) that prints what
 * gpu_cosplay_perf.py prints on an H200; one test runs the real script, which must refuse without CUDA.
 */
import {spawnSync} from 'node:child_process'
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import type {CalibrateResult} from '../../src/measure/calibrate-host.js'
import type {PlanResult} from '../../src/client/plan-for.js'
import {cleanupTemps, ROOT, runJson, Sim, tempDir} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

const FAKE = join(ROOT, 'test', 'cli', 'support', 'fake-perf-python')

function world(extra: Record<string, string> = {}) {
  const sim = Sim.create('h200', 2)
  const log = join(tempDir(), 'fake.json')
  const env = sim.env({GPU_COSPLAY_PYTHON: FAKE, FAKE_PERF_LOG: log, ...extra})
  return {sim, env, log, stateDir: env.GPU_COSPLAY_STATE_DIR!}
}

describe('calibrate', () => {
  it('measures the GPU chosen by UUID and stores the fractions per model and driver', () => {
    const {sim, env, log, stateDir} = world()
    const {exitCode, json} = runJson<CalibrateResult>(['calibrate', '--host-gpu', '1'], env)
    expect(exitCode).toBe(0)
    const uuid = /GPU 1: .*\(UUID: (GPU-[^)]+)\)/.exec(sim.smi(['-L']))![1]
    const called = JSON.parse(readFileSync(log, 'utf8'))
    expect(called.cudaVisibleDevices).toBe(uuid)
    expect(called.argv).toEqual([
      join(ROOT, 'runtime-hooks', 'gpu_cosplay_perf.py'),
      '--device',
      'cuda',
      '--no-vram',
      '--smi-id',
      uuid,
      '--smi',
      env.GPU_COSPLAY_NVIDIA_SMI,
    ])
    expect(json.gpu).toEqual({model: 'h200_sxm', name: 'NVIDIA H200', uuid})
    expect(json.peak).toEqual({fp32Tflops: 66.91, bf16Tflops: 989.4, bandwidthGBs: 4800})
    expect(json.fractions.bf16).toBeCloseTo(790 / 989.4, 3)
    expect(json.fractions.bandwidth).toBeCloseTo(4300 / 4800, 3)
    expect(json.file).toBe(join(stateDir, 'calibrations', `h200_sxm-${json.driver}.json`))
    expect(JSON.parse(readFileSync(json.file, 'utf8'))).toMatchObject({version: 1, driver: json.driver, fractions: json.fractions})
  })

  it.each([
    ['no CUDA device', {FAKE_PERF_MODE: 'nocuda'}, 'CALIBRATE_NO_CUDA', 3],
    ['a crash of the measurement', {FAKE_PERF_MODE: 'garbage'}, 'PERF_MEASURE_FAILED', 3],
    ['no such interpreter', {GPU_COSPLAY_PYTHON: '/nonexistent/python3'}, 'PYTHON_NOT_FOUND', 3],
  ])('fails clearly on %s and stores nothing', (_, extra, code, exit) => {
    const {env, stateDir} = world(extra)
    const {exitCode, json} = runJson(['calibrate'], env)
    expect([json.error.code, exitCode]).toEqual([code, exit])
    expect(existsSync(join(stateDir, 'calibrations'))).toBe(false)
  })

  it('the real measurement script refuses a machine without CUDA', () => {
    const python = '/usr/bin/python3'
    const hasTorch = spawnSync(python, ['-c', 'import torch'], {stdio: 'ignore'}).status === 0
    const {env} = world({GPU_COSPLAY_PYTHON: python})
    const {exitCode, json} = runJson(['calibrate'], env)
    expect([json.error.code, exitCode]).toEqual([hasTorch ? 'CALIBRATE_NO_CUDA' : 'PERF_NO_TORCH', 3])
  })

  it("measures the host as it is: the caller's MPS, allocator and GPU_COSPLAY_* settings do not reach the script", () => {
    const {env, log} = world({
      CUDA_MPS_PIPE_DIRECTORY: '/tmp/someone-elses-mps',
      CUDA_MPS_ACTIVE_THREAD_PERCENTAGE: '10',
      PYTORCH_CUDA_ALLOC_CONF: 'expandable_segments:True',
      GPU_COSPLAY_VRAM_MIB: '1024',
    })
    expect(runJson(['calibrate'], env).exitCode).toBe(0)
    expect(JSON.parse(readFileSync(log, 'utf8')).shapingEnv).toEqual([])
  })

  it('refuses a GPU that others compute on', () => {
    const {sim, env, log} = world()
    sim.smi(['--sim-set', 'gpus.0.processes=[{"pid":42,"name":"python3","used_mib":900}]'])
    const {exitCode, json} = runJson(['calibrate'], env)
    expect([json.error.code, exitCode]).toEqual(['CALIBRATE_GPU_BUSY', 3])
    expect(json.error.message).toContain('pid 42')
    expect(existsSync(log)).toBe(false)
  })

  it('refuses a GPU with MIG mode on', () => {
    const {sim, env, log} = world()
    sim.enableMig(0)
    const {exitCode, json} = runJson(['calibrate'], env)
    expect([json.error.code, exitCode]).toEqual(['CALIBRATE_MIG_ON', 3])
    expect(existsSync(log)).toBe(false)
  })
})

describe('plan with and without a calibration', () => {
  it('shows achievable = peak x fraction once calibrated, and says which it used', () => {
    const {env} = world()
    const before = runJson<PlanResult>(['plan', '3090', '--host-gpu', '0'], env)
    const datasheetBefore = runJson<PlanResult>(['plan', '3090', '--host-gpu', '0', '--datasheet'], env)
    expect(before.json.achievable).toMatchObject({basis: 'peak', calibration: null, expected: {fp32Tflops: null, bf16Tflops: null, bandwidthGBs: null}})
    expect(runJson(['calibrate'], env).exitCode).toBe(0)
    const after = runJson<PlanResult>(['plan', '3090', '--host-gpu', '0'], env)
    expect(after.exitCode).toBe(0)
    const a = after.json.achievable
    expect(a.basis).toBe('calibrated')
    expect(a.expected.bf16Tflops).toBeCloseTo(after.json.expected.bf16Tflops * (790 / 989.4), 0)
    expect(a.expected.bandwidthGBs).toBeCloseTo(after.json.expected.bandwidthGBs * (4300 / 4800), -1)
    // on datasheets the plan is what it was (the JSON only gained a field); on what cards measure, the calibration
    // moves this host's rates (relative to the catalog's figure for this card in calibrate's own method)
    const datasheetAfter = runJson<PlanResult>(['plan', '3090', '--host-gpu', '0', '--datasheet'], env)
    expect({...datasheetAfter.json, achievable: undefined, measured: undefined}).toEqual({...datasheetBefore.json, achievable: undefined, measured: undefined})
    expect(before.json.measured!.hostRates.bf16).not.toContain('calibrated')
    expect(after.json.measured!.hostRates.bf16).toContain(`calibrated / catalog in gpu_cosplay_perf.py's method`)
    expect(after.json.measured!.hostRates.bf16).toContain(a.calibration!.file)
    // against a catalog model there is no host to have measured
    expect(runJson<PlanResult>(['plan', '3090', '--on', 'h200'], env).json.achievable.basis).toBe('peak')
  })

  it('refuses a damaged calibration file, naming it', () => {
    const {env} = world()
    const {json} = runJson<CalibrateResult>(['calibrate'], env)
    writeFileSync(json.file, '{"version": 1}')
    const plan = runJson(['plan', '3090', '--host-gpu', '0'], env)
    expect([plan.json.error.code, plan.exitCode]).toEqual(['CALIBRATION_INVALID', 3])
    expect(plan.json.error.message).toContain(json.file)
  })

  it('refuses a calibration taken under another driver', () => {
    const {sim, env} = world()
    expect(runJson(['calibrate'], env).exitCode).toBe(0)
    sim.set('driver', '999.99.99')
    const plan = runJson(['plan', '3090', '--host-gpu', '0'], env)
    expect([plan.json.error.code, plan.exitCode]).toEqual(['CALIBRATION_STALE', 3])
  })
})
