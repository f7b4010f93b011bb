import {assertHoldInput, assertHolder, leaseSessionName} from '../../../src/apply/lease-hold.js'
import {assertSessionName} from '../../../src/apply/session-names.js'
import {exportPlan} from '../../../src/export/export-plan.js'
import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {forwardedArgv} from '../../../src/remote/remote-command-line.js'
import {builtinCatalog, hostModel, target} from '../plan/catalog-for-tests.js'
import {thrown} from '../support/thrown.js'

/** The --holder values an export renders, as the shell would pass them (a Slurm job id expanded). */
function holdersIn(format: 'k8s' | 'slurm', label: string): string[] {
  const host = planHostFromModel(hostModel('h200'))
  const t = target('3090')
  const text = exportPlan(builtinCatalog(), host, t, planCosplay(t, host), {format, label, image: 'gpu-cosplay:0.1.0'})
  return [...text.matchAll(/--holder ("[^"]*"|[^\s;']+)/g)].map((m) => m[1].replace(/^"|"$/g, '').replace('$SLURM_JOB_ID', '4294967294'))
}

describe('lease holder names', () => {
  it.each([
    ['k8s', 'a'.repeat(63)],
    ['k8s', 'gpu-cosplay-rtx-3090'],
    ['slurm', 'gpu-cosplay-rtx-3090'],
  ] as const)('every holder a %s export renders (label %s) is accepted', (format, label) => {
    const holders = holdersIn(format, label)
    expect(holders.length).toBeGreaterThanOrEqual(2)
    for (const holder of holders) expect(() => assertHolder(holder)).not.toThrow()
  })

  it('the longest k8s holder is the DaemonSet name (at most 63) with its prefix', () => {
    expect(Math.max(...holdersIn('k8s', 'a'.repeat(63)).map((h) => h.length))).toBe(67)
  })

  it.each(['', 'job 42', '-x', 'a/b', 'x'.repeat(81), 'a;rm', 'é'])('refuses %j as a holder (exit 2)', (holder) => {
    expect(thrown(() => assertHolder(holder))).toMatchObject({code: 'BAD_HOLDER', exit: 2})
  })

  it('needs something to hold', () => {
    expect(thrown(() => assertHoldInput('j', {clockMHz: null, powerLimitW: null}))).toMatchObject({code: 'NOTHING_TO_HOLD', exit: 2})
  })

  it('a lease session can never have the name of an up session', () => {
    expect(thrown(() => assertSessionName(leaseSessionName('slurm-job-1')))).toMatchObject({code: 'BAD_SESSION_NAME'})
  })

  it('--host forwards a lease command as the box types it: the topic and command as two words', () => {
    expect(forwardedArgv('lease:hold', ['--host-gpu', '0', '--holder', 'slurm-job-1', '--host', 'box', '--power-limit-w', '350'])).toEqual([
      'lease',
      'hold',
      '--json',
      '--host-gpu',
      '0',
      '--holder',
      'slurm-job-1',
      '--power-limit-w',
      '350',
    ])
  })
})
