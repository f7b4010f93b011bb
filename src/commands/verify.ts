import {Args, Flags, ux} from '@oclif/core'

import type {VerifyPerfResult} from '../measure/verify-perf.js'
import type {VerifyResult} from '../measure/verify-session.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'
import {fixed, formatTable} from '../render/format-table.js'

export default class Verify extends BaseCommand {
  static summary = 'Self-test a session: does every layer in the container agree on the target GPU?'
  static description = `Runs runtime-hooks/verify.py inside the session (docker exec, as you) and prints PASS, FAIL or SKIP with the reason for each check: the environment contract, your identity, the nvidia-smi shim, the Python hook, torch (name, properties, memory, allocation just under and just over the cap), TF32/BF16 policy, pynvml, JAX/CuPy settings. Checks that need a GPU or an absent library SKIP. Exit code 1 on any FAIL.

With --perf it measures instead (torch in the session on its GPU, under 30 s): FP32 and BF16 GEMM TFLOPS in the steady state, copy bandwidth, the largest allocation the VRAM cap allows and whether the driver enforces it, and clock/power samples per axis; and compares each with the plan's peak (at the clock observed), the achievable figure when this GPU model was calibrated (gpu-cosplay calibrate), and the target. PASS within 10% of the expectation, WARN within 25%, FAIL beyond (exit 1). When CUDA cannot be used in the session it fails (exit 1) and says why; --cpu measures on the CPU on purpose (every verdict SKIP).`
  static examples = ['<%= config.bin %> verify', '<%= config.bin %> verify alice-rtx_3090 --json', '<%= config.bin %> verify --perf']
  static args = {name: Args.string({description: 'session name (default: your only session)'})}
  static flags = {
    perf: Flags.boolean({description: 'measure throughput, bandwidth and the VRAM cap against the plan'}),
    cpu: Flags.boolean({description: 'with --perf: measure on the CPU on purpose (a smoke test; every verdict SKIP)', dependsOn: ['perf']}),
    ...hostFlag,
  }

  async run(): Promise<VerifyResult | VerifyPerfResult> {
    const {args, flags} = await this.parse(Verify)
    const render = (r: VerifyResult | VerifyPerfResult) => (flags.perf ? renderVerifyPerf(r as VerifyPerfResult) : renderVerify(r as VerifyResult))
    const remote = await this.forwardToHost(flags.host, render)
    if (remote) return remote.result
    const {verifySession} = await import('../measure/verify-session.js')
    const result = await verifySession(args.name, {perf: flags.perf, cpu: flags.cpu}, this.jsonEnabled() ? null : ux.action)
    if (!this.jsonEnabled()) this.log(render(result))
    if (result.summary.FAIL > 0) process.exitCode = 1
    return result
  }
}

export function renderVerify(r: VerifyResult): string {
  const width = Math.max(5, ...r.checks.map((c) => c.name.length))
  return [
    ...r.checks.map((c) => `${c.status.padEnd(4)}  ${c.name.padEnd(width)}  ${c.detail}`),
    `${r.summary.PASS} passed, ${r.summary.FAIL} failed, ${r.summary.SKIP} skipped (session ${r.session})`,
  ].join('\n')
}

const AXIS_LABELS = {fp32: 'FP32 GEMM TFLOPS', bf16: 'BF16 GEMM TFLOPS', bandwidth: 'Copy GB/s (r+w)', vram: 'VRAM GiB usable'} as const

export function renderVerifyPerf(r: VerifyPerfResult): string {
  const rows = (Object.keys(AXIS_LABELS) as (keyof typeof AXIS_LABELS)[]).map((axis) => {
    const a = r.axes[axis]
    const d = axis === 'bandwidth' ? 0 : axis === 'vram' ? 2 : 1
    // CPU GEMMs are a few hundredths of a TFLOPS: keep their digits
    const measuredDigits = r.device.kind === 'cpu' && d === 1 ? 3 : d
    return [AXIS_LABELS[axis], fixed(a.measured, measuredDigits), fixed(a.expectedPeak, d), fixed(a.expectedCalibrated, d), fixed(a.target, d), a.verdict]
  })
  const device = `${r.device.kind === 'cpu' ? 'CPU (measured on purpose, --cpu): ' : ''}${r.device.name}${r.device.driver ? `, driver ${r.device.driver}` : ''}`
  const s = r.samples.summary
  const sampled =
    r.samples.count > 0 && s
      ? `samples (${r.samples.count}, real values): SM clock ${s.smClockMHz ? `${s.smClockMHz.min}-${s.smClockMHz.max} MHz` : '-'}, power ${s.powerW ? `${s.powerW.min}-${s.powerW.max} W` : '-'}` +
        `, throttle ${s.throttleReasons.length > 0 ? s.throttleReasons.join(', ') : 'none'}`
      : `samples: none (${r.samples.reason ?? 'no nvidia-smi'})`
  const cap = r.vramCap
    ? `VRAM cap ${fixed(r.vramCap.capGiB, 2)} GiB: up to it ${r.vramCap.underCapOk ? 'works' : 'FAILS'}, 1 GiB more ${r.vramCap.overCapRefused ? 'is refused' : 'is ALLOWED'}` +
      (r.vramCap.cupyRefused === null ? '' : `; CuPy ${r.vramCap.cupyRefused ? 'refuses' : 'ALLOWS'} it`) +
      `; enforced by the driver: ${r.vramCap.hard === null ? 'unknown' : r.vramCap.hard ? 'yes' : 'no (library-level cap)'}` +
      (r.vramCap.hardPlanned ? ' (planned hard)' : '') +
      (r.vramCap.note ? ` - ${r.vramCap.note}` : '')
    : null
  const clock = r.clock?.plannedMHz
    ? `clock: planned ${r.clock.plannedMHz} MHz, observed FP32 ${r.clock.observedMHz.fp32 ?? '-'} / BF16 ${r.clock.observedMHz.bf16 ?? '-'} MHz` +
      (r.clock.factor.fp32 !== 1 || r.clock.factor.bf16 !== 1 ? ` (expectations scaled x${r.clock.factor.fp32} / x${r.clock.factor.bf16})` : '')
    : null
  return [
    `session ${r.session} on ${device}`,
    '',
    formatTable(['AXIS', 'MEASURED', 'PEAK', 'CALIBRATED', 'TARGET', 'VERDICT'], rows),
    '',
    ...(cap ? [cap] : []),
    ...(clock && r.device.kind === 'cuda' ? [clock] : []),
    sampled,
    r.expectation.note,
    `${r.summary.PASS} passed, ${r.summary.WARN} warned, ${r.summary.FAIL} failed, ${r.summary.SKIP} skipped`,
  ].join('\n')
}
