import {Args, Flags, ux} from '@oclif/core'

import type {VerifyDistributedResult} from '../measure/verify-distributed.js'
import type {VerifyPerfResult} from '../measure/verify-perf.js'
import type {VerifyResult} from '../measure/verify-session.js'
import {BaseCommand} from '../shell/base-command.js'
import {hostFlag} from '../shell/host-flag.js'
import {renderVerify, renderVerifyDistributed, renderVerifyPerf} from '../render/render-verify.js'

export default class Verify extends BaseCommand {
  static summary = 'Self-test a session: does every layer in the container agree on the target GPU?'
  static description = `Runs runtime-hooks/verify.py inside the session (docker exec, as you) and prints PASS, FAIL or SKIP with the reason for each check: the environment contract, your identity, the nvidia-smi shim, the Python hook, torch (name, properties, memory, allocation just under and just over the cap), TF32/BF16 policy, pynvml, JAX/CuPy settings; and, from an ssh login shell and an ssh command, that a CUDA client reaches the session's MPS daemon holding the plan's active thread percentage and pinned memory limit (SKIP for a session planned without MPS). Checks that need a GPU or an absent library SKIP. Exit code 1 on any FAIL.

With --distributed (a session of several devices, up --count N) it runs an all-reduce and one DistributedDataParallel step with torch's launcher, a rank per device, and reports each rank's device, the slice the costume narrowed it to, its memory limit and times, and the backend: NCCL where torch has CUDA and an NCCL of 2.30 or later, gloo otherwise, and why. Exit 1 when a rank fails or reaches another device than its own.

With --perf it measures instead (torch in the session on its GPU, under 30 s): FP32 and BF16 GEMM TFLOPS in the steady state, copy bandwidth, the largest allocation the VRAM cap allows and whether the driver enforces it, and clock/power samples per axis; and compares each with the plan's peak (at the clock observed), the achievable figure when this GPU model was calibrated (gpu-cosplay calibrate), and the target. PASS within 10% of the expectation, WARN within 25%, FAIL beyond (exit 1). When CUDA cannot be used in the session it fails (exit 1) and says why; --cpu measures on the CPU on purpose (every verdict SKIP).`
  static examples = [
    '<%= config.bin %> verify',
    '<%= config.bin %> verify alice-rtx_3090 --json',
    '<%= config.bin %> verify --perf',
    '<%= config.bin %> verify --distributed',
  ]
  static args = {name: Args.string({description: 'session name (default: your only session)'})}
  static flags = {
    perf: Flags.boolean({description: 'measure throughput, bandwidth and the VRAM cap against the plan'}),
    cpu: Flags.boolean({description: 'with --perf: measure on the CPU on purpose (a smoke test; every verdict SKIP)', dependsOn: ['perf']}),
    distributed: Flags.boolean({
      description: 'a session of several devices (up --count N): an all-reduce and a DDP step across its ranks, and which backend works',
      exclusive: ['perf'],
    }),
    ...hostFlag,
  }

  async run(): Promise<VerifyResult | VerifyPerfResult | VerifyDistributedResult> {
    const {args, flags} = await this.parse(Verify)
    const render = (r: VerifyResult | VerifyPerfResult | VerifyDistributedResult) =>
      flags.distributed
        ? renderVerifyDistributed(r as VerifyDistributedResult)
        : flags.perf
          ? renderVerifyPerf(r as VerifyPerfResult)
          : renderVerify(r as VerifyResult)
    const remote = await this.forwardToHost(flags.host, render)
    if (remote) return remote.result
    const {perform} = await import('../engine/perform.js')
    const progress = this.jsonEnabled()
      ? null
      : {say: (line: string) => this.logToStderr(line), start: (a: string) => ux.action.start(a), stop: (o: string) => ux.action.stop(o)}
    const request = {op: 'verify' as const, name: args.name ?? null, perf: flags.perf === true, cpu: flags.cpu === true}
    const result = await perform(flags.distributed ? {...request, distributed: true} : request, {progress}, this.config.version)
    if (!this.jsonEnabled()) this.log(render(result))
    if ('ranks' in result ? !result.ok : result.summary.FAIL > 0) process.exitCode = 1
    return result
  }
}
