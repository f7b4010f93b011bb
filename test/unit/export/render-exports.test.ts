import {spawnSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {ConfigMap, Pod} from 'kubernetes-models/v1'
import {DaemonSet} from 'kubernetes-models/apps/v1'

import {exportInput, exportPlan, type ExportOptions} from '../../../src/export/export-plan.js'
import {costumeEnv} from '../../../src/plan/costume-env.js'
import type {PlanBasis} from '../../../src/plan/types.js'
import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {builtinCatalog, hostModel, target} from '../plan/catalog-for-tests.js'
import {thrown} from '../support/thrown.js'
import {golden, parseMigParted, parseSlurmBundle, yamlDocuments} from './export-fixtures.js'

const IMAGE = 'gpu-cosplay:0.1.0'

function exported(targetName: string, hostName: string, options: Omit<ExportOptions, 'image'> & {image?: string}, basis?: PlanBasis): string {
  const host = planHostFromModel(hostModel(hostName))
  const t = target(targetName)
  return exportPlan(builtinCatalog(), host, t, planCosplay(t, host, 'balanced', {}, {basis}), {image: IMAGE, ...options})
}

const h200Plan = () => planCosplay(target('3090'), planHostFromModel(hostModel('h200')))

describe('plan 3090 --on h200, exported', () => {
  it.each([
    ['mig-parted', 'h200-3090.mig-parted.yaml'],
    ['k8s', 'h200-3090.k8s.yaml'],
    ['slurm', 'h200-3090.slurm.conf'],
  ] as const)('-o %s matches %s and is byte-stable', (format, file) => {
    const text = exported('3090', 'h200', {format})
    expect(text).toBe(golden(file, text))
    expect(exported('3090', 'h200', {format})).toBe(text)
  })

  it('mig-parted: parses as a v1 spec that fills the GPU with the planned slice, filtered to the H200 PCI id', () => {
    const spec = parseMigParted(exported('3090', 'h200', {format: 'mig-parted'}))
    expect(Object.keys(spec['mig-configs'])).toEqual(['gpu-cosplay-rtx-3090'])
    expect(spec['mig-configs']['gpu-cosplay-rtx-3090']).toEqual([
      {'device-filter': ['0x233510DE'], devices: 'all', 'mig-enabled': true, 'mig-devices': {[h200Plan().mig!.profile]: 4}},
    ])
  })

  it('mig-parted: warns in a comment that applying destroys every instance on the GPU', () => {
    const comments = exported('3090', 'h200', {format: 'mig-parted'})
      .split('\n')
      .filter((l) => l.startsWith('#'))
      .join(' ')
    expect(comments).toMatch(/destroys every MIG instance/)
    expect(comments).toMatch(/gpu-cosplay up/)
  })

  describe('k8s', () => {
    const docs = () => yamlDocuments(exported('3090', 'h200', {format: 'k8s'}))

    it('is a ConfigMap, a DaemonSet and a Pod that the Kubernetes OpenAPI schemas accept (kubernetes-models)', () => {
      const [configMap, daemonSet, pod] = docs()
      expect(docs().map((d) => d.kind)).toEqual(['ConfigMap', 'DaemonSet', 'Pod'])
      expect(() => new ConfigMap(configMap as any).validate()).not.toThrow()
      expect(() => new DaemonSet(daemonSet as any).validate()).not.toThrow()
      expect(() => new Pod(pod as any).validate()).not.toThrow()
    })

    it('the schema check can fail', () => {
      const pod = docs()[2]
      pod.spec.containers[0].env[0].value = 24
      expect(() => new Pod(pod as any).validate()).toThrow()
    })

    it('the Pod requests one MIG device of the planned profile and carries exactly the costume environment', () => {
      const plan = h200Plan()
      const pod = docs()[2]
      const container = pod.spec.containers[0]
      expect(container.image).toBe(IMAGE)
      expect(container.resources).toEqual({limits: {[`nvidia.com/mig-${plan.mig!.profile}`]: 1}})
      const env = Object.fromEntries(container.env.map((e: {name: string; value: string}) => [e.name, e.value]))
      expect(env).toEqual(costumeEnv(plan, {hasTf32: true}, Math.round(plan.mig!.memoryGiB * 1024), pod.metadata.name))
      expect(pod.spec.nodeSelector).toEqual({'nvidia.com/mig.config': 'gpu-cosplay-rtx-3090'})
    })

    it('--mig-strategy single requests nvidia.com/gpu', () => {
      const pod = yamlDocuments(exported('3090', 'h200', {format: 'k8s', migStrategy: 'single'}))[2]
      expect(pod.spec.containers[0].resources).toEqual({limits: {'nvidia.com/gpu': 1}})
    })

    it('the ConfigMap holds the same layout as -o mig-parted', () => {
      const configMap = docs()[0]
      expect(parseMigParted(configMap.data['config.yaml'])).toEqual(parseMigParted(exported('3090', 'h200', {format: 'mig-parted'})))
    })

    it('the privileged DaemonSet holds the GPU-wide power limit with lease hold and releases it on SIGTERM', () => {
      const plan = h200Plan()
      expect(plan.powerLimitW).toBeLessThan(hostModel('h200').powerDefaultW)
      const spec = docs()[1].spec.template.spec
      const container = spec.containers[0]
      expect(container.securityContext).toEqual({privileged: true})
      const script: string = container.command[2]
      expect(script).toContain(`gpu-cosplay lease hold --host-gpu 0 --power-limit-w ${plan.powerLimitW}`)
      expect(script).toMatch(/trap '.*gpu-cosplay lease release --host-gpu 0 .*' TERM/)
      // set before the hold runs: a SIGTERM during the hold is taken after it, so nothing stays held
      expect(script.indexOf('trap ')).toBeLessThan(script.indexOf('lease hold'))
      expect(spawnSync('sh', ['-n', '-c', script]).status).toBe(0)
    })

    it('no DaemonSet when the plan needs neither a clock lock nor a lower power limit', () => {
      // The same plan with the clock unlocked and the power limit at the H200's default: nothing GPU-wide to hold.
      const host = planHostFromModel(hostModel('h200'))
      const plan = {...planCosplay(target('3090'), host), clockMHz: null, powerLimitW: 700}
      const text = exportPlan(builtinCatalog(), host, target('3090'), plan, {format: 'k8s', image: IMAGE})
      expect(yamlDocuments(text).map((d) => d.kind)).toEqual(['ConfigMap', 'Pod'])
    })

    it('on a host without MIG: no ConfigMap, a whole GPU', () => {
      const text = exported('3090', 'l40s', {format: 'k8s'})
      const kinds = yamlDocuments(text).map((d) => d.kind)
      expect(kinds).not.toContain('ConfigMap')
      const pod = yamlDocuments(text).at(-1)!
      expect(pod.spec.containers[0].resources).toEqual({limits: {'nvidia.com/gpu': 1}})
    })
  })

  describe('slurm', () => {
    const text = () => exported('3090', 'h200', {format: 'slurm', nodeName: 'gpu[01-04]'})

    it('parses strictly: gres.conf AutoDetect=nvml, Gres and TRES typed by the MIG profile', () => {
      const profile = h200Plan().mig!.profile
      const {conf} = parseSlurmBundle(text())
      expect(conf.get('gres.conf')).toEqual([['AutoDetect=nvml']])
      expect(conf.get('slurm.conf')).toEqual([
        ['GresTypes=gpu'],
        [`AccountingStorageTRES=gres/gpu,gres/gpu:${profile}`],
        [`NodeName=gpu[01-04]`, `Gres=gpu:${profile}:4`],
        ['Prolog=/etc/slurm/gpu-cosplay-prolog.sh'],
        ['Epilog=/etc/slurm/gpu-cosplay-epilog.sh'],
        ['TaskProlog=/etc/slurm/gpu-cosplay-task-prolog.sh'],
      ])
    })

    it('the strict reader can fail', () => {
      expect(() => parseSlurmBundle(text().replace('AutoDetect=nvml', 'AutoDetect = nvml'))).toThrow()
      expect(() => parseSlurmBundle(text().replace('GresTypes=gpu', 'GresTypo=gpu'))).toThrow()
    })

    it('prolog and epilog lease the GPU-wide setting and can never fail (sh runs them with a failing gpu-cosplay)', () => {
      const {parts} = parseSlurmBundle(text())
      const prolog = parts.get('/etc/slurm/gpu-cosplay-prolog.sh')!.join('\n')
      const epilog = parts.get('/etc/slurm/gpu-cosplay-epilog.sh')!.join('\n')
      expect(prolog).toMatch(/^gpu-cosplay lease hold --host-gpu 0 .*--holder "slurm-job-\$SLURM_JOB_ID" \|\| true$/m)
      expect(epilog).toMatch(/^gpu-cosplay lease release --host-gpu 0 .*\|\| true$/m)
      // A gpu-cosplay that records its argv and fails, first on PATH.
      const bin = mkdtempSync(join(tmpdir(), 'gpu-cosplay-slurm-'))
      writeFileSync(join(bin, 'gpu-cosplay'), `#!/bin/sh\nprintf '%s|' "$@" >> ${bin}/calls\necho boom >&2\nexit 3\n`, {mode: 0o755})
      try {
        for (const script of [prolog, epilog]) {
          const run = spawnSync('/bin/sh', ['-c', script], {env: {PATH: `${bin}:/usr/bin:/bin`, SLURM_JOB_ID: '7'}, encoding: 'utf8'})
          expect(run.status).toBe(0)
        }
        const calls = readFileSync(join(bin, 'calls'), 'utf8')
        expect(calls).toContain('lease|hold|--host-gpu|0|')
        expect(calls).toContain('lease|release|--host-gpu|0|--holder|slurm-job-7|')
      } finally {
        rmSync(bin, {recursive: true, force: true})
      }
    })

    it('the TaskProlog, run by sh, prints exactly the costume environment as `export NAME=value` lines', () => {
      const plan = h200Plan()
      const script = parseSlurmBundle(text()).parts.get('/etc/slurm/gpu-cosplay-task-prolog.sh')!.join('\n')
      const run = spawnSync('sh', ['-c', script], {env: {PATH: process.env.PATH, SLURM_JOB_ID: '42'}, encoding: 'utf8'})
      expect(run.status).toBe(0)
      const lines = run.stdout.trimEnd().split('\n')
      expect(lines.every((l) => /^export [A-Z_][A-Z0-9_]*=/.test(l))).toBe(true)
      const env = Object.fromEntries(lines.map((l) => l.slice('export '.length)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]))
      expect(env).toEqual(costumeEnv(plan, {hasTf32: true}, Math.round(plan.mig!.memoryGiB * 1024), 'slurm-job-42'))
    })

    it('tells the admin to lay the GPU out with -o mig-parted first', () => {
      expect(text()).toMatch(/does not partition MIG/)
      expect(text()).toMatch(/-o mig-parted/)
    })
  })
})

// The packing is checked on datasheet plans (plan --datasheet), whose layouts these goldens were made from; a mix
// keeps the basis of the command's own plan (the last case).
describe('--mix', () => {
  it('packs 3090x2,t4x3 onto one H200 (golden) and the spec parses', () => {
    const text = exported('3090', 'h200', {format: 'mig-parted', mix: '3090x2,t4x3'}, 'datasheet')
    expect(text).toBe(golden('h200-mix-3090x2-t4x3.mig-parted.yaml', text))
    const spec = parseMigParted(text)
    const profileOf = (name: string) => planCosplay(target(name), planHostFromModel(hostModel('h200')), 'balanced', {}, {basis: 'datasheet'}).mig!.profile
    expect(spec['mig-configs']['gpu-cosplay-rtx-3090x2-t4x3'][0]['mig-devices']).toEqual({[profileOf('t4')]: 3, [profileOf('3090')]: 2})
  })

  it('gives 4090x3 the closest profile all three fit in (2g.35gb, not 3g.71gb twice), and says what it lost (golden)', () => {
    expect(planCosplay(target('4090'), planHostFromModel(hostModel('h200')), 'balanced', {}, {basis: 'datasheet'}).mig!.profile).toBe('3g.71gb')
    const text = exported('4090', 'h200', {format: 'mig-parted', mix: '4090x3'}, 'datasheet')
    expect(text).toBe(golden('h200-mix-4090x3.mig-parted.yaml', text))
    expect(parseMigParted(text)['mig-configs']['gpu-cosplay-rtx-4090x3'][0]['mig-devices']).toEqual({'2g.35gb': 3})
    expect(text).toMatch(/^# .*2g\.35gb instead of 3g\.71gb \(FP32 -\d/m)
  })

  it('packs a mix of several targets as a whole: a40 keeps 3g.71gb, 4090 and l4 share the rest', () => {
    const text = exported('4090', 'h200', {format: 'mig-parted', mix: 'a40,l4'}, 'datasheet')
    expect(parseMigParted(text)['mig-configs']['gpu-cosplay-rtx-4090x1-a40x1-l4x1'][0]['mig-devices']).toEqual({'2g.35gb': 2, '3g.71gb': 1})
  })

  it("plans the mix's other targets on the basis of the command's own plan", () => {
    const profileOf = (name: string) => planCosplay(target(name), planHostFromModel(hostModel('h200'))).mig!.profile
    const measured = parseMigParted(exported('3090', 'h200', {format: 'mig-parted', mix: '3090,t4'}))
    expect(measured['mig-configs']['gpu-cosplay-rtx-3090x1-t4x1'][0]['mig-devices']).toEqual({[profileOf('t4')]: 1, [profileOf('3090')]: 1})
    const datasheet = exported('3090', 'h200', {format: 'mig-parted', mix: '3090,t4'}, 'datasheet')
    expect(datasheet).not.toBe(exported('3090', 'h200', {format: 'mig-parted', mix: '3090,t4'}))
  })

  it("counts the command's own target once when the mix does not name it", () => {
    const input = exportInput(builtinCatalog(), planHostFromModel(hostModel('h200')), target('3090'), h200Plan(), {
      format: 'mig-parted',
      mix: 't4x2',
      image: IMAGE,
    })
    expect(input.layout!.entries.map((e) => [e.targetKey, e.count])).toEqual([
      ['rtx_3090', 1],
      ['t4', 2],
    ])
  })

  it.each([
    ['3090x2,t4x5', 'MIX_DOES_NOT_FIT'],
    ['3090x5', 'MIX_DOES_NOT_FIT'],
    ['a100-80g', 'MIX_DOES_NOT_FIT'],
    ['t4x0', 'BAD_MIX'],
    ['t4x2,t4x1', 'BAD_MIX'],
    ['voodoo5x2', 'UNKNOWN_GPU'],
  ])('refuses %s with %s, exit 2', (mix, code) => {
    const error = thrown(() => exported('3090', 'h200', {format: 'mig-parted', mix}))
    expect({code: error.code, exit: error.exit}).toEqual({code: expect.stringMatching(new RegExp(`^${code}`)), exit: 2})
  })

  it.each([
    ['4090', '4090x2,a40x2', /^a40 #2: no MIG slice of 48 GiB or more is left on one NVIDIA H200 SXM \(141GB\) beside 4090 x2, a40 x1$/],
    ['3090', '3090x5', /^3090 x5: one NVIDIA H200 SXM \(141GB\) holds at most 4 MIG slices of 24 GiB or more$/],
    ['t4', 't4x4,1650x4', /^the mix asks for 8 MIG instances; one NVIDIA H200 SXM \(141GB\) holds at most 7$/],
  ])('plan %s --mix %s is refused only because no layout holds it, and says why in one line', (own, mix, why) => {
    const error = thrown(() => exported(own, 'h200', {format: 'mig-parted', mix}))
    expect({code: error.code, exit: error.exit}).toEqual({code: 'MIX_DOES_NOT_FIT', exit: 2})
    expect(error.message).toMatch(why)
  })

  it('works with -o mig-parted only', () => {
    const error = thrown(() => exported('3090', 'h200', {format: 'k8s', mix: 't4x2'}))
    expect({code: error.code, exit: error.exit}).toEqual({code: 'MIX_NEEDS_MIG_PARTED', exit: 2})
  })

  it('refuses a mig-parted export on a host without MIG', () => {
    const error = thrown(() => exported('3090', 'l40s', {format: 'mig-parted'}))
    expect({code: error.code, exit: error.exit}).toEqual({code: 'EXPORT_NEEDS_MIG', exit: 2})
  })

  it('refuses a label Kubernetes would not take', () => {
    const error = thrown(() => exported('3090', 'h200', {format: 'k8s', label: 'bad label!'}))
    expect({code: error.code, exit: error.exit}).toEqual({code: 'BAD_LABEL', exit: 2})
  })
})
