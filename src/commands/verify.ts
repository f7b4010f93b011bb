import {Args} from '@oclif/core'

import {ContainerError} from '../core/errors.js'
import {BaseCommand} from './support/base-command.js'

export type VerifyCheck = {name: string; status: 'PASS' | 'FAIL' | 'SKIP'; detail: string}
export type VerifyResult = {session: string; checks: VerifyCheck[]; summary: {PASS: number; FAIL: number; SKIP: number}}

export default class Verify extends BaseCommand {
  static summary = 'Self-test a session: does every layer in the container agree on the target GPU?'
  static description = `Runs runtime-hooks/verify.py inside the session (docker exec, as you) and prints PASS, FAIL or SKIP with the reason for each check: the environment contract, your identity, the nvidia-smi shim, the Python hook, torch (name, properties, memory, allocation just under and just over the cap), TF32/BF16 policy, pynvml, JAX/CuPy settings. Checks that need a GPU or an absent library SKIP. Exit code 1 on any FAIL.`
  static examples = ['<%= config.bin %> verify', '<%= config.bin %> verify alice-rtx_3090 --json']
  static args = {name: Args.string({description: 'session name (default: your only session)'})}

  async run(): Promise<VerifyResult> {
    const {args} = await this.parse(Verify)
    const {accessSession} = await import('./support/session-access.js')
    const {DockerRuntime} = await import('../container/runtime.js')
    const access = accessSession(args.name)
    const c = access.container
    const ran = await new DockerRuntime().exec(c.id, ['python3', '/opt/gpu-cosplay/hooks/verify.py'], {user: c.user, workingDir: '/workspace'})
    let parsed: {checks: VerifyCheck[]; summary: VerifyResult['summary']}
    try {
      parsed = JSON.parse(ran.stdout)
    } catch (error) {
      throw new ContainerError(
        'VERIFY_FAILED',
        `verify.py in ${c.name} printed no report (exit ${ran.exitCode}): ${(ran.stderr || ran.stdout).trim().split('\n').pop() ?? ''}`,
        {
          cause: error,
          fix: ['is python3 in the image?', `look inside: gpu-cosplay ssh ${c.session}`],
        },
      )
    }
    const result: VerifyResult = {session: c.session, checks: parsed.checks, summary: parsed.summary}
    if (!this.jsonEnabled()) this.log(renderVerify(result))
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
