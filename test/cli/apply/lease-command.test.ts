/**
 * `lease hold|release`: GPU-wide settings held for a named holder (a Slurm job, a Kubernetes DaemonSet), with no
 * instance and no container, sharing the GPU's leases with `up` sessions.
 */
import {freshHost, freshScene} from '../support/crash-points.js'
import {flagsOf, hold, HOLD_A, release} from '../support/lease-args.js'
import {cleanupTemps, runCli, runJson, stderrLines} from '../support/run-cli.js'
import {gpuState, mutatingCalls} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

describe('lease hold and release', () => {
  it('the first hold applies the values once, a second holder joins without a call, and the last release restores what was found', () => {
    const {sim, env, before} = freshScene()

    sim.clearCalls()
    const first = runJson(HOLD_A, env)
    expect(first.exitCode).toBe(0)
    expect(flagsOf(mutatingCalls(sim))).toEqual(['-pm', '-lgc', '-pl'])
    expect(first.json).toMatchObject({
      holder: 'slurm-job-42',
      session: 'lease:slurm-job-42',
      hostGpu: {index: 0},
      clockMHz: 1395,
      powerLimitW: 350,
      changed: true,
    })
    expect(first.json.settings).toEqual([
      {setting: 'clocks', value: 1395, action: 'set'},
      {setting: 'power-limit', value: 350, action: 'set'},
    ])
    expect(sim.state().gpus[0]).toMatchObject({power_limit: 350, clocks_locked: [1395, 1395], persistence: true})

    sim.clearCalls()
    const second = runJson(hold('slurm-job-43', '--clock-mhz', '1395'), env)
    expect(second.exitCode).toBe(0)
    expect(mutatingCalls(sim)).toEqual([])
    expect(second.json.settings).toEqual([{setting: 'clocks', value: 1395, action: 'joined'}])
    expect(second.json.changed).toBe(false)
    const clocks = runJson(['status'], env).json.gpus[0].leases.clocks
    expect(clocks.holders).toEqual(['lease:slurm-job-42', 'lease:slurm-job-43'])

    // the first holder leaves: the power limit only it held comes back; the clock stays locked for the second
    sim.clearCalls()
    const out = runJson(release('slurm-job-42'), env)
    expect(out.exitCode).toBe(0)
    expect(out.json).toMatchObject({released: true, restored: ['power-limit']})
    expect(flagsOf(mutatingCalls(sim))).toEqual(['-pl'])
    expect(sim.state().gpus[0]).toMatchObject({power_limit: 650, clocks_locked: [1395, 1395]})

    const last = runJson(release('slurm-job-43'), env)
    expect(last.exitCode).toBe(0)
    expect(last.json.restored.sort()).toEqual(['clocks', 'persistence'])
    expect(last.json.leases).toEqual([])
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(['ps'], env).json).toEqual([])
  }, 60_000)

  it('is idempotent: the same hold again changes nothing, a release of a holder that holds nothing exits 0 and says so', () => {
    const {sim, env, before} = freshScene()
    expect(runCli(HOLD_A, env).exitCode).toBe(0)
    const held = gpuState(sim)

    sim.clearCalls()
    const again = runJson(HOLD_A, env)
    expect(again.exitCode).toBe(0)
    expect(again.json.changed).toBe(false)
    expect(again.json.settings.map((s: any) => s.action)).toEqual(['held', 'held'])
    expect(mutatingCalls(sim)).toEqual([])
    expect(gpuState(sim)).toEqual(held)
    expect(runJson(['ps'], env).json).toHaveLength(1)

    expect(runCli(release('slurm-job-42'), env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
    sim.clearCalls()
    const twice = runCli(release('slurm-job-42'), env)
    expect(twice.exitCode).toBe(0)
    expect(twice.stdout).toMatch(/held nothing/)
    expect(runJson(release('never-held'), env).json).toMatchObject({released: false, restored: []})
    expect(mutatingCalls(sim)).toEqual([])
  }, 60_000)

  it('refuses a value that differs from one held on the GPU, names who holds what, and leaves the GPU untouched', () => {
    const sim = freshHost()
    const env = sim.env()
    expect(runCli(HOLD_A, env).exitCode).toBe(0)
    const during = gpuState(sim)
    sim.clearCalls()
    for (const args of [hold('other', '--clock-mhz', '1200'), hold('other', '--power-limit-w', '300'), hold('slurm-job-42', '--clock-mhz', '1200')]) {
      const refused = runJson(args, env)
      expect(refused.exitCode).toBe(3)
      expect(refused.json.error.code).toBe('LEASE_CONFLICT')
      const text = runCli(args, env)
      expect(stderrLines(text)).toHaveLength(1)
      expect(text.stderr).toContain('slurm-job-42')
    }
    expect(mutatingCalls(sim)).toEqual([])
    expect(gpuState(sim)).toEqual(during)
    expect(runJson(['ps'], env).json.map((s: any) => s.name)).toEqual(['lease:slurm-job-42'])
  }, 60_000)

  it.each([
    ['a clock the GPU does not support', hold('j', '--clock-mhz', '1400'), 'BAD_CLOCK'],
    ['a clock above the maximum', hold('j', '--clock-mhz', '2100'), 'BAD_CLOCK'],
    ['a power limit below the minimum', hold('j', '--power-limit-w', '150'), 'BAD_POWER_LIMIT'],
    ['a power limit above the maximum', hold('j', '--power-limit-w', '800'), 'BAD_POWER_LIMIT'],
    ['a power limit that is no number', hold('j', '--power-limit-w', 'lots'), 'BAD_POWER_LIMIT'],
    ['nothing to hold', hold('j'), 'NOTHING_TO_HOLD'],
    ['a holder with a space', hold('job 42', '--clock-mhz', '1395'), 'BAD_HOLDER'],
    ['a holder too long', hold('x'.repeat(81), '--clock-mhz', '1395'), 'BAD_HOLDER'],
    ['no holder', ['lease', 'hold', '--clock-mhz', '1395'], 'BAD_USAGE'],
    ['a GPU that is not there', ['lease', 'hold', '--host-gpu', '3', '--clock-mhz', '1395', '--holder', 'j'], 'GPU_INDEX_OUT_OF_RANGE'],
    ['release without a holder', ['lease', 'release', '--host-gpu', '0'], 'BAD_USAGE'],
  ])(
    '%s: exit 2, one line, nothing touched',
    (_label, args, code) => {
      const {sim, env, before} = freshScene()
      sim.clearCalls()
      const result = runJson(args, env)
      expect(result.exitCode).toBe(2)
      expect(result.json.error.code).toBe(code)
      expect(stderrLines(runCli(args, env))).toHaveLength(1)
      expect(mutatingCalls(sim)).toEqual([])
      expect(gpuState(sim)).toEqual(before)
    },
    30_000,
  )
})

// GTX 1650 --match fp32 on an H200 without MPS takes a MIG slice and the GPU-wide clock lock and power limit.
const UP = ['up', '1650', '--match', 'fp32', '--no-container', '--lock-clock', '--name', 'tenant']

describe('a lease hold and an up session on one GPU share the leases', () => {
  it('up joins the values a lease holds; the lease leaving keeps them; the last down restores', () => {
    const {sim, env, before} = freshScene()
    const lease = runJson(hold('k8s-gpu-cosplay-lease-gtx-1650', '--clock-mhz', '750', '--power-limit-w', '200'), env)
    expect(lease.exitCode).toBe(0)

    const up = runJson(UP, env)
    expect(up.exitCode).toBe(0)
    expect(up.json.clockMHz).toBe(750)
    expect(up.json.powerLimitW).toBe(200)
    const leases = runJson(['status'], env).json.gpus[0].leases
    expect(leases.clocks.holders).toEqual(['lease:k8s-gpu-cosplay-lease-gtx-1650', 'tenant'])
    expect(leases['power-limit'].holders).toEqual(['lease:k8s-gpu-cosplay-lease-gtx-1650', 'tenant'])

    sim.clearCalls()
    expect(runJson(release('k8s-gpu-cosplay-lease-gtx-1650'), env).json.restored).toEqual([])
    expect(mutatingCalls(sim)).toEqual([])
    expect(sim.state().gpus[0]).toMatchObject({power_limit: 200, clocks_locked: [750, 750]})

    expect(runCli(['down', 'tenant'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  }, 60_000)

  it('a hold joins what an up session set; the session leaving keeps it; the last release restores', () => {
    const {sim, env, before} = freshScene()
    const up = runJson(UP, env)
    expect(up.exitCode).toBe(0)
    const {clockMHz, powerLimitW} = up.json
    const during = gpuState(sim)

    sim.clearCalls()
    const lease = runJson(hold('slurm-job-7', '--clock-mhz', String(clockMHz), '--power-limit-w', String(powerLimitW)), env)
    expect(lease.exitCode).toBe(0)
    expect(lease.json.settings.map((s: any) => s.action)).toEqual(['joined', 'joined'])
    expect(mutatingCalls(sim)).toEqual([])

    // up --strict with other values is refused by the lease as by any session
    const strict = runJson(['up', '3060', '--match', 'fp32', '--no-container', '--name', 'strict', '--strict'], env)
    expect(strict.json.error?.code).toBe('LEASE_CONFLICT')

    expect(runCli(['down', 'tenant'], env).exitCode).toBe(0)
    const state = sim.state().gpus[0]
    expect(state.clocks_locked).toEqual([clockMHz, clockMHz])
    expect(state.power_limit).toBe(powerLimitW)
    expect(state.gis ?? []).toEqual([])
    expect(gpuState(sim)).not.toEqual(during)

    expect(runCli(release('slurm-job-7'), env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  }, 60_000)

  it('ps and status show the hold; down --all ends holds and sessions alike', () => {
    const {sim, env, before} = freshScene()
    expect(runCli(hold('slurm-job-9', '--clock-mhz', '735'), env).exitCode).toBe(0)
    expect(runCli(UP, env).exitCode).toBe(0)

    const ps = runJson(['ps'], env).json
    const lease = ps.find((s: any) => s.kind === 'lease')
    expect(lease).toMatchObject({name: 'lease:slurm-job-9', target: null, gpuIndex: 0, mig: null, container: null, phase: 'active', crashed: false})
    expect(lease.lease).toEqual({holder: 'slurm-job-9', clockMHz: 735, powerLimitW: null})
    expect(ps.find((s: any) => s.kind === 'up')).toMatchObject({name: 'tenant', target: 'gtx_1650', lease: null})
    const text = runCli(['ps'], env).stdout
    expect(text).toMatch(/lease:slurm-job-9 .*lease: clock 735 MHz/)

    // no container to reach
    const exec = runCli(['exec', 'lease:slurm-job-9', '--', 'true'], env)
    expect(exec.exitCode).toBe(2)
    expect(exec.stderr).toMatch(/lease hold/)

    const down = runJson(['down', '--all'], env)
    expect(down.exitCode).toBe(0)
    expect(down.json.closed.map((c: any) => [c.name, c.target]).sort()).toEqual([
      ['lease:slurm-job-9', null],
      ['tenant', 'gtx_1650'],
    ])
    expect(gpuState(sim)).toEqual(before)
  }, 60_000)

  it('down lease:HOLDER ends that hold like lease release', () => {
    const {sim, env, before} = freshScene()
    expect(runCli(HOLD_A, env).exitCode).toBe(0)
    expect(runCli(['down', 'lease:slurm-job-42'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(release('slurm-job-42'), env).json.released).toBe(false)
  }, 60_000)
})
