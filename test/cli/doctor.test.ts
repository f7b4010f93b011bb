import {afterAll, describe, expect, it, jest} from '@jest/globals'

import type {DoctorResult} from '../../src/client/doctor-checks.js'
import {baseEnv, cleanupTemps, runCli, runJson, Sim, SIM_BIN} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

const checkNamed = (result: DoctorResult, name: string) => result.checks.find((c) => c.name === name)

describe.each([1, 8])('doctor on a simulated %i-GPU H200', (gpus) => {
  it('reports every GPU with live MIG profiles where MIG is on, in at most 3 nvidia-smi calls', () => {
    const sim = Sim.create('h200', gpus).enableMig(0)
    sim.createInstances(0, [9])
    sim.clearCalls()
    const {exitCode, json} = runJson<DoctorResult>(['doctor'], sim.env())
    // the two MIG tables are read at the same time: their order in the log varies
    expect(
      sim
        .calls()
        .map((c) => c.argv.join(' '))
        .sort(),
    ).toEqual(['-q', 'mig -lgi', 'mig -lgip'])

    expect(json.gpus).toHaveLength(gpus)
    expect(json.nvidiaSmi).toEqual({path: SIM_BIN, driverVersion: '550.90.12', cudaVersion: expect.any(String)})
    const [first] = json.gpus
    expect(Object.keys(first).sort()).toEqual(
      ['clocks', 'hostModel', 'index', 'migCapable', 'migEnabled', 'migPending', 'migProfiles', 'migProfilesSource', 'name', 'power', 'uuid'].sort(),
    )
    expect(first).toMatchObject({
      index: 0,
      name: 'NVIDIA H200',
      hostModel: 'h200_sxm',
      migCapable: true,
      migEnabled: true,
      migPending: false,
      migProfilesSource: 'live',
    })
    expect(first.uuid).toMatch(/^GPU-/)
    expect(first.power).toEqual({min: 200, max: 700, default: 700, current: 700})
    expect(first.clocks).toEqual({min: expect.any(Number), max: 1980})
    expect(first.migProfiles.find((p) => p.name === '3g.71gb')).toEqual({name: '3g.71gb', id: 9, smCount: 60, memoryGiB: 69.5, free: 1, total: 2})

    if (gpus > 1) {
      const off = json.gpus[1]
      expect(off).toMatchObject({migEnabled: false, migProfilesSource: 'catalog'})
      expect(off.migProfiles.every((p) => p.free === p.total)).toBe(true)
    }

    expect(json.checks.map((c) => c.name)).toEqual([
      'nvidia-smi',
      ...json.gpus.map((g) => `gpu ${g.index}`),
      'docker',
      'nvidia container runtime',
      'privileges',
      'mps',
      'state directory',
      'shared box',
    ])
    for (const check of json.checks) {
      expect(Object.keys(check).sort()).toEqual(['detail', 'fix', 'name', 'status'])
      expect(['ok', 'missing', 'warn']).toContain(check.status)
    }
    expect(checkNamed(json, 'nvidia-smi')?.status).toBe('ok')
    expect(checkNamed(json, 'docker')?.status).toBe('missing') // DOCKER_HOST points nowhere in tests
    expect(json.ok).toBe(false)
    expect(exitCode).toBe(1)
  })
})

describe('doctor', () => {
  it('reports a missing nvidia-smi instead of failing, with a fix', () => {
    const {exitCode, json, stderr} = runJson<DoctorResult>(['doctor'], baseEnv({GPU_COSPLAY_NVIDIA_SMI: '/nonexistent/nvidia-smi'}))
    expect(exitCode).toBe(1)
    expect(stderr).toBe('')
    expect(json.gpus).toEqual([])
    expect(json.nvidiaSmi.path).toBeNull()
    expect(checkNamed(json, 'nvidia-smi')).toMatchObject({status: 'missing'})
    expect(checkNamed(json, 'nvidia-smi')!.fix.join(' ')).toContain('--on')
  })

  it.each([
    ['failing', (s: Sim) => void s.failNext({match: '-q'}), 'SMI_FAILED'],
    ['printing garbage', (s: Sim) => void s.set('garbage', true), 'SMI_UNPARSEABLE'],
  ])('reports nvidia-smi %s as missing', (_name, prepare, code) => {
    const sim = Sim.create('h200', 2)
    prepare(sim)
    const {exitCode, json} = runJson<DoctorResult>(['doctor'], sim.env())
    expect(exitCode).toBe(1)
    expect(checkNamed(json, 'nvidia-smi')?.status).toBe('missing')
    expect(checkNamed(json, 'nvidia-smi')?.detail).toContain(code)
  })

  it('finds the NVIDIA runtime hook on PATH', () => {
    const sim = Sim.create('l40s', 1)
    const env = sim.env()
    env.PATH = `${process.cwd()}/test/e2e/bin:${env.PATH}`
    const {json} = runJson<DoctorResult>(['doctor'], env)
    expect(checkNamed(json, 'nvidia container runtime')?.status).toBe('ok')
    expect(json.gpus[0]).toMatchObject({hostModel: 'l40s', migCapable: false, migProfiles: [], migProfilesSource: null})
  })

  it('renders a checklist as text and exits 1 when something is missing', () => {
    const sim = Sim.create('h200', 1)
    const result = runCli(['doctor'], sim.env())
    expect(result.exitCode).toBe(1)
    expect(result.stdout).toMatch(/^\[ok\]\s+nvidia-smi/m)
    expect(result.stdout).toMatch(/^\[MISSING\]\s+docker/m)
    expect(result.stdout).toMatch(/GPU 0: NVIDIA H200/)
    expect(result.stderr).toBe('')
  })
})

describe('doctor and the state directory', () => {
  it('reports an unwritable state directory as missing, with a fix', () => {
    const result = runJson(['doctor'], baseEnv({GPU_COSPLAY_STATE_DIR: '/proc/version/state'}))
    const check = result.json.checks.find((c: {name: string}) => c.name === 'state directory')
    expect(check.status).toBe('missing')
    expect(check.fix.length).toBeGreaterThan(0)
    expect(result.exitCode).toBe(1)
  })
})
