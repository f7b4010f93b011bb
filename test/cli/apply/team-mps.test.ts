/**
 * The team scene on one simulated H200 with MPS (test/sim/nvidia-cuda-mps-control): sessions of small targets
 * are shaped inside their own 1g slices, the GPU-wide clock and power stay as found, `plan` predicts `up`,
 * and every daemon goes with its session, also after a kill -9.
 */
import {execFileSync} from 'node:child_process'
import {existsSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {cleanupTemps, MPS_SIM_BIN, runCli, runJson, Sim} from '../support/run-cli.js'
import {mpsEnv, mpsLog} from '../support/mps-sim.js'
import {gpuState, killHungSims, startCli} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

/** Seven small targets: each fits a 1g.18gb slice of an H200 (16 SMs, 8.1 FP32 TFLOPS at 1980 MHz). */
// Seven cards small enough for a 1g slice each. On what the cards measure, an RTX 2060 12GB (about 7.2 FP32 TFLOPS)
// and an RTX 2070 (7.9) both outrun 16 H200 SMs (6.2) and want a 1g.35gb, and the H200 has room for one beside six
// 1g.18gb, where the driver places it first: the 2070 comes first and takes it, a GTX 1660 SUPER stands in for the 2060 12GB.
const TEAM = ['rtx_2070', 'gtx_1650', 'gtx_1660', 'gtx_1660_ti', 'rtx_2060', 'gtx_1660_super', 't4']
/** MPS gives whole TPCs (2 SMs): on an H200 SM at 1980 MHz that is 1.01 TFLOPS a step */
const TPC_TFLOPS = (2 * 256 * 1980) / 1e6

/** What a session's own daemon holds now, asked the way a client's tools would. */
function askDaemon(pipeDirectory: string, command: string): string {
  return execFileSync(MPS_SIM_BIN, [], {input: `${command}\n`, env: {...process.env, CUDA_MPS_PIPE_DIRECTORY: pipeDirectory}, encoding: 'utf8'}).trim()
}

function daemonPid(pipeDirectory: string): number | null {
  const file = join(pipeDirectory, 'nvidia-cuda-mps-control.pid')
  return existsSync(file) ? Number(readFileSync(file, 'utf8').trim()) : null
}

/** A live process; a zombie (exited, not yet reaped: some container inits never reap) counts as gone. */
function isAlive(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

describe('seven small targets on one H200, shaped by MPS', () => {
  it('each lands on its own 1g slice within 3% of its FP32 (or half an SM step), plan predicts up, the GPU-wide settings stay as found', () => {
    const sim = Sim.create('h200', 1).set('gpus.0.power_limit', 650)
    const env = mpsEnv(sim)
    const before = gpuState(sim)
    const sessions: {name: string; pipe: string; mig: string}[] = []
    for (const key of TEAM) {
      const planned = runJson(['plan', key, '--host-gpu', '0', '--match', 'fp32'], env)
      expect(planned.exitCode).toBe(0)
      const up = runJson(['up', key, '--match', 'fp32', '--no-container', '--name', key.replace(/_/g, '-')], env)
      expect(up.exitCode).toBe(0)
      const plan = up.json.plan
      // plan before up predicted it exactly
      const {achievable: _ignored, ...predicted} = planned.json
      expect(plan).toEqual(predicted)
      // a 1g slice each: 1g.18gb, or 1g.35gb for a card that measures more than 16 H200 SMs give (an RTX 2070: 7.9 TFLOPS)
      expect(plan.mig.profile).toMatch(/^1g\./)
      expect(plan.mps).not.toBeNull()
      // what the card measures, within 3% or half a TPC (a measured TPC is less than the datasheet one)
      const tolerance = Math.max(0.03 * plan.measured.target.fp32Tflops, TPC_TFLOPS / 2 + 0.01)
      expect(Math.abs(plan.measured.expected.fp32Tflops - plan.measured.target.fp32Tflops)).toBeLessThanOrEqual(tolerance)
      expect(up.json).toMatchObject({clockMHz: null, powerLimitW: null, gpuWide: {clockLock: false, powerLimit: false}})
      // the pinned limit is what the card reports to CUDA (its VRAM where that is not known)
      expect(up.json.mps).toMatchObject({smCount: plan.smCount, pinnedMemLimitMiB: plan.memory.hardLimitMiB})
      expect(plan.memory.hardLimitMiB).toBeLessThanOrEqual(plan.vramCapMiB)
      expect(up.json.env.CUDA_MPS_PIPE_DIRECTORY).toBe(up.json.mps.pipeDirectory)
      sessions.push({name: up.json.name, pipe: up.json.mps.pipeDirectory, mig: up.json.mig.uuid})
      // the daemon of this session got this plan's limits, and holds them
      const sent = mpsLog(sim)
        .filter((r) => r.pipeDirectory === up.json.mps.pipeDirectory && r.command && !r.argv.includes('-d'))
        .map((r) => r.command)
      expect(sent).toEqual([
        `set_default_active_thread_percentage ${plan.mps.activeThreadPercentage}`,
        `set_default_device_pinned_mem_limit 0 ${plan.memory.hardLimitMiB}M`,
      ])
      expect(askDaemon(up.json.mps.pipeDirectory, 'get_default_active_thread_percentage')).toBe(`${plan.mps.activeThreadPercentage}.0`)
    }
    // a team of different targets: not one percentage for all
    expect(
      new Set(
        mpsLog(sim)
          .filter((r) => r.command?.startsWith('set_default_active'))
          .map((r) => r.command),
      ).size,
    ).toBeGreaterThan(3)
    // one daemon per session, on the session's own MIG device, with its limits
    const starts = mpsLog(sim).filter((r) => r.argv.includes('-d'))
    expect(starts.map((r) => r.cudaVisibleDevices).sort()).toEqual(sessions.map((s) => s.mig).sort())
    for (const s of sessions) expect(isAlive(daemonPid(s.pipe)!)).toBe(true)
    expect(mpsLog(sim).some((r) => r.command?.startsWith('set_default_device_pinned_mem_limit 0 '))).toBe(true)
    // GPU-wide: clocks never locked, the power limit never set
    expect(sim.calls().some((c) => c.argv.includes('-lgc') || c.argv.includes('-pl'))).toBe(false)
    expect((gpuState(sim)[0] as any).powerLimitW).toBe(650)

    // down of one leaves the others' daemons and instances
    const [first, ...others] = sessions
    const pid = daemonPid(first.pipe)!
    expect(runCli(['down', first.name], env).exitCode).toBe(0)
    expect(isAlive(pid)).toBe(false)
    for (const s of others) expect(isAlive(daemonPid(s.pipe)!)).toBe(true)
    expect(runJson(['ps'], env).json).toHaveLength(others.length)

    const pids = others.map((s) => daemonPid(s.pipe)!)
    expect(runCli(['down', '--all'], env).exitCode).toBe(0)
    for (const p of pids) expect(isAlive(p)).toBe(false)
    expect(gpuState(sim)).toEqual(before)
  }, 180_000)
})

describe('the MPS step under crashes and failures', () => {
  it('kill -9 right after the daemon started, then recover: no daemon, the GPU as before', async () => {
    const sim = Sim.create('h200', 1)
    const env = mpsEnv(sim, {GPU_COSPLAY_TEST_PAUSE_AFTER_STEP: 'start-mps'})
    const before = gpuState(sim)
    const running = startCli(['up', 't4', '--no-container', '--name', 'victim'], env)
    let pipe: string | undefined
    const deadline = Date.now() + 20_000
    while (!pipe && Date.now() < deadline) {
      const started = mpsLog(sim).find((r) => r.argv.includes('-d'))
      if (started && daemonPid(started.pipeDirectory) !== null) pipe = started.pipeDirectory
      else await new Promise((r) => setTimeout(r, 50))
    }
    expect(pipe).toBeDefined()
    const pid = daemonPid(pipe!)!
    running.kill('SIGKILL')
    await running.done
    killHungSims(sim)
    expect(isAlive(pid)).toBe(true)

    const after = {...env, GPU_COSPLAY_TEST_PAUSE_AFTER_STEP: undefined}
    const recovered = runJson(['recover'], after)
    expect(recovered.json.error).toBeUndefined()
    expect(recovered.exitCode).toBe(0)
    expect(recovered.json.gpus[0].recovered).toEqual(['victim'])
    expect(isAlive(pid)).toBe(false)
    expect(existsSync(pipe!)).toBe(false)
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(['ps'], after).json).toEqual([])
  }, 60_000)

  it.each(['-d', 'set_default_active_thread_percentage'])(
    'a daemon that fails at %s: up fails, no daemon and no instance are left',
    (fault) => {
      const sim = Sim.create('h200', 1)
      const before = gpuState(sim)
      const env = mpsEnv(sim, {GPU_COSPLAY_SIM_MPS_FAIL: fault})
      const up = runJson(['up', 't4', '--no-container', '--name', 'broken'], env)
      expect(up.exitCode).toBe(3)
      expect(up.json.error.code).toBe('MPS_FAILED')
      const started = mpsLog(sim).find((r) => r.argv.includes('-d'))
      if (started) expect(daemonPid(started.pipeDirectory)).toBeNull()
      expect(gpuState(sim)).toEqual(before)
      expect(runJson(['ps'], env).json).toEqual([])
    },
    30_000,
  )

  it('without MPS on the host, plan says so and falls back to GPU-wide shaping', () => {
    const sim = Sim.create('h200', 1)
    const plan = runJson(['plan', '1650', '--host-gpu', '0', '--match', 'fp32'], sim.env())
    expect(plan.json.mps).toBeNull()
    expect(plan.json.gpuWide.clockLock).toBe(true)
    expect(plan.json.warnings.join('\n')).toMatch(/MPS/)
  })

  it('up --no-mps plans as a host without MPS does and starts no daemon; plan --no-mps predicts it', () => {
    const sim = Sim.create('h200', 1)
    const env = mpsEnv(sim)
    const before = gpuState(sim)
    const planned = runJson(['plan', 't4', '--host-gpu', '0', '--no-mps'], env)
    expect(planned.json.mps).toBeNull()
    const up = runJson(['up', 't4', '--no-mps', '--no-container', '--name', 'plain'], env)
    expect(up.json.error).toBeUndefined()
    expect(up.exitCode).toBe(0)
    expect(up.json.plan.mps).toBeNull()
    expect(up.json.mps).toBeNull()
    const {achievable: _ignored, ...predicted} = planned.json
    expect(up.json.plan).toEqual(predicted)
    expect(up.json.env.CUDA_MPS_PIPE_DIRECTORY).toBeUndefined()
    expect(mpsLog(sim)).toEqual([])
    expect(runCli(['down', 'plain'], env).exitCode).toBe(0)
    expect(gpuState(sim)).toEqual(before)
  })

  it('--lock-clock on a slice takes the GPU-wide clock as asked, and says why', () => {
    const sim = Sim.create('h200', 1)
    const plan = runJson(['plan', '1650', '--host-gpu', '0', '--match', 'fp32', '--lock-clock'], mpsEnv(sim))
    expect(plan.json.gpuWide).toMatchObject({clockLock: true, powerLimit: false})
    expect(plan.json.gpuWide.reason).toMatch(/asked/)
  })
})
