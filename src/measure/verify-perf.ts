/**
 * The host side of `verify --perf`: reads what verify.py --perf measured in the session, and holds it to the
 * session's plan (from the GPU book), this GPU model's calibration and the target's catalog entry: what the real card
 * measures, with its method and source.
 */
import {tally} from '../core/check.js'
import {ContainerError} from '../core/errors.js'
import {readCalibration} from '../apply/calibration-file.js'
import {parsePerfOutput} from '../host/perf-measurement.js'
import {expectationsFromPlan, PERF_AXES, PERF_VERDICTS, type PerfReport, perfReport, type PerfVerdict} from '../plan/perf-verdict.js'
import {currentCatalog} from '../client/context.js'
import type {SessionAccess} from '../client/session-access.js'

/** `verify --perf`: measured vs expected vs target per axis, with the calibration the expectation used */
export type VerifyPerfResult = PerfReport & {
  session: string
  calibration: {file: string; driver: string; measuredAt: string} | null
  summary: Record<PerfVerdict, number>
}

export async function verifyPerf(access: SessionAccess, ran: {exitCode: number; stdout: string; stderr: string}): Promise<VerifyPerfResult> {
  const c = access.container
  const output = parsePerfOutput(ran.stdout)
  if (output === null) {
    const isOldImage = /"checks"\s*:/.test(ran.stdout)
    const last = (ran.stderr || ran.stdout).trim().split('\n').pop() ?? ''
    throw new ContainerError(
      isOldImage ? 'PERF_UNSUPPORTED_IMAGE' : 'VERIFY_FAILED',
      isOldImage ? `the hooks in ${c.name} predate verify --perf` : `verify.py --perf in ${c.name} printed no measurement (exit ${ran.exitCode}): ${last}`,
      {fix: isOldImage ? ['rebuild the image (gpu-cosplay build), then bring the session up again'] : [`look inside: gpu-cosplay ssh ${c.session}`]},
    )
  }
  if (output.kind === 'refused') {
    if (output.code === 'NO_TORCH') {
      throw new ContainerError('PERF_NO_TORCH', `${c.name}: ${output.message}`, {
        fix: ['install torch in the image (e.g. pip install torch), or use an image that has it: gpu-cosplay up --image'],
      })
    }
    // the session has a GPU and cannot use it: a failed check (exit 1), not a CPU measurement that passes
    const code = output.code === 'NO_CUDA' ? 'PERF_NO_CUDA' : output.code === 'DEVICE_OPEN' ? 'PERF_DEVICE_OPEN' : 'PERF_MEASURE_FAILED'
    throw new ContainerError(code, `${c.name}: ${output.message}`, {
      exit: 1,
      fix: [
        'check CUDA in the session: gpu-cosplay ssh ' + c.session + ' -- python3 -c "import torch; torch.cuda.init()"',
        'the image needs torch built for CUDA; under MPS, see /run/gpu-cosplay/mps/status in the session',
        'to measure the CPU on purpose: gpu-cosplay verify --perf --cpu',
      ],
    })
  }
  const m = output.measurement
  const catalog = await currentCatalog()
  const host = catalog.hosts.find((h) => h.key === access.session.plan.host.model)
  const expectations = {...expectationsFromPlan(access.session.plan), ...(host?.tensorClockMaxMHz ? {tensorClockMaxMHz: host.tensorClockMaxMHz} : {})}
  // CPU figures say nothing about the GPU, so no calibration applies to them
  const found =
    m.device.kind === 'cuda' && m.device.driver ? readCalibration(access.stateDir, expectations.hostModel, m.device.driver, access.call.policy) : null
  const target = catalog.targets.find((t) => t.key === expectations.targetKey)
  // each axis beside what the real card measures, by its own method; the plan's measured expectation restated in
  // this measurement's method by the host card's catalog figures
  const report = perfReport(m, expectations, found?.calibration.fractions ?? null, target?.reference, host?.measuredRates)
  const verdicts = PERF_AXES.map((axis) => report.axes[axis].verdict)
  const summary = tally(PERF_VERDICTS, verdicts)
  return {
    session: c.session,
    ...report,
    calibration: found ? {file: found.file, driver: found.calibration.driver, measuredAt: found.calibration.measuredAt} : null,
    summary,
  }
}
