/**
 * The edge of `calibrate`: picks the GPU (probe), refuses a GPU that is not whole and idle, runs the
 * measurement through the Python funnel and stores the fractions in the state directory.
 */
import {homedir} from 'node:os'
import {join} from 'node:path'

import {resolveStateDir} from '../apply/state-dir.js'
import {listSessions} from '../apply/book-store.js'
import {HostError} from '../core/errors.js'
import type {CallContext} from '../core/call-context.js'
import {LocalExecutor} from '../core/local-executor.js'
import {HOST_ENV} from '../core/names.js'
import {packageRoot} from '../core/package-root.js'
import {writeCalibration} from '../apply/calibration-file.js'
import type {Calibration} from '../host/calibration.js'
import {measureHostPerf} from '../host/measure-host-perf.js'
import {pickGpu} from '../host/pick-gpu.js'
import {smiPathFrom} from '../host/smi.js'
import {probeHost} from '../host/probe.js'
import {calibrationFigures} from '../plan/calibration-figures.js'
import {hostModelFor} from '../plan/plan-host.js'
import {currentCatalog, localSmi} from '../client/context.js'

export type CalibrateResult = Calibration & {
  /** where it was stored */
  file: string
  index: number
  /** axes whose measurement failed, with why (their fraction is null, so plan uses the peak for them) */
  errors: Record<string, string>
  elapsedS: number
}

export async function calibrateHost(call: CallContext, index: number, now: Date): Promise<CalibrateResult> {
  const catalog = await currentCatalog()
  const probe = await probeHost(localSmi())
  const gpu = pickGpu(probe, index)
  const model = hostModelFor(catalog, gpu)
  if (gpu.migMode?.current === 'enabled') {
    throw new HostError('CALIBRATE_MIG_ON', `GPU ${index} has MIG mode on: calibrate measures the whole GPU, and CUDA sees only MIG slices there`, {
      fix: ['calibrate while MIG mode is off (e.g. before the first session on this GPU)', 'inside a session, measure with: gpu-cosplay verify --perf'],
    })
  }
  const stateDir = resolveStateDir(process.env, homedir(), call.policy).dir
  const holders = listSessions(stateDir, call.policy).filter((l) => l.gpuUuid === gpu.uuid)
  if (holders.length > 0) {
    throw new HostError(
      'CALIBRATE_GPU_BUSY',
      `GPU ${index} holds sessions (${holders.map((l) => l.session.name).join(', ')}): their clock and power settings would skew the figures`,
      {
        fix: ['calibrate when no session is on this GPU', 'inside a session, measure with: gpu-cosplay verify --perf'],
      },
    )
  }
  // a GPU others compute on shares its SMs, power and clock with them: the figures would be theirs as much as its own
  const others = gpu.processes ?? []
  if (others.length > 0) {
    throw new HostError(
      'CALIBRATE_GPU_BUSY',
      `GPU ${index} is in use by ${others.length} process(es) (${others
        .slice(0, 5)
        .map((p) => `${p.name} pid ${p.pid}`)
        .join(', ')}): their work would skew the figures`,
      {fix: ['calibrate when nothing runs on this GPU (nvidia-smi shows its processes)']},
    )
  }
  const m = await measureHostPerf(new LocalExecutor(), {
    python: process.env[HOST_ENV.python] || 'python3',
    script: join(packageRoot(), 'runtime-hooks', 'gpu_cosplay_perf.py'),
    gpuIndex: index,
    gpuUuid: gpu.uuid,
    smiPath: smiPathFrom(process.env),
    callerEnv: process.env,
  })
  const driver = probe.driverVersion ?? m.device.driver
  if (!driver) {
    throw new HostError('DRIVER_UNKNOWN', `neither nvidia-smi nor the measurement names the driver of GPU ${index}`, {
      fix: ['check: nvidia-smi --query-gpu=driver_version --format=csv'],
    })
  }
  const measured = {fp32Tflops: m.axes.fp32.measured, bf16Tflops: m.axes.bf16.measured, bandwidthGBs: m.axes.bandwidth.measured}
  const positive = (v: number | null) => (v !== null && v > 0 ? v : null)
  const summary = m.samples.summary
  const calibration: Calibration = {
    version: 1,
    gpu: {model: model.key, name: gpu.name, uuid: gpu.uuid},
    driver,
    measuredAt: now.toISOString(),
    torch: m.device.torch ?? null,
    measured: {fp32Tflops: positive(measured.fp32Tflops), bf16Tflops: positive(measured.bf16Tflops), bandwidthGBs: positive(measured.bandwidthGBs)},
    ...calibrationFigures(model, measured),
    samples: {smClockMHz: summary?.smClockMHz ?? null, powerW: summary?.powerW ?? null, throttleReasons: summary?.throttleReasons ?? []},
  }
  const file = writeCalibration(stateDir, calibration, call.policy)
  const errors = Object.fromEntries((['fp32', 'bf16', 'bandwidth'] as const).flatMap((a) => (m.axes[a].error ? [[a, m.axes[a].error]] : [])))
  return {file, index, ...calibration, errors, elapsedS: m.elapsedS}
}
