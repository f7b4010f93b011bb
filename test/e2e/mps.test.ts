/**
 * The session's MPS daemon, real Docker end to end (test/e2e/run.sh, as root; every CLI call as `cosplayer`), with
 * the MPS stand-in the stub runtime hook drops into each GPU container: `up` fails, leaving nothing, when the plan
 * needs MPS and the daemon does not run (no control binary in the container, or a failing `-d`); `up --no-mps` comes
 * up without one; `verify` checks from an ssh login shell and an ssh command that a CUDA client reaches the daemon
 * with the plan's limits, and fails naming what differs.
 */
import {jest} from '@jest/globals'

import {BASE_IMAGE, buildDefaultImage, containersOf, docker, NO_SSHD_IMAGE, version, World} from './support.js'

jest.setTimeout(180_000)

/**
 * The faults, as images of the default one: a session's --env values never reach its container's root part (the
 * entrypoint, the stub runtime hook, the MPS daemon it starts), an image's own variables do.
 */
const FAULTS = {
  // the stub runtime hook then installs no MPS control binary (a driver install without it)
  noMpsControl: {image: 'gpu-cosplay-e2e-fault:no-mps-control', env: 'GPU_COSPLAY_E2E_NO_MPS_CONTROL=1'},
  // the MPS stand-in's -d fails
  mpsFail: {image: 'gpu-cosplay-e2e-fault:mps-fail', env: 'GPU_COSPLAY_SIM_MPS_FAIL=-d'},
} as const

let world: World
beforeAll(() => {
  // the default image from this tree's docker/ (its entrypoint writes the MPS status with the reason)
  buildDefaultImage()
  docker(['build', '-q', '-t', NO_SSHD_IMAGE, '-'], `FROM ${BASE_IMAGE}\nRUN rm -f /usr/sbin/sshd\n`)
  for (const {image, env} of Object.values(FAULTS)) docker(['build', '-q', '-t', image, '-'], `FROM gpu-cosplay:${version()}\nENV ${env}\n`)
})
afterAll(() => {
  for (const {image} of Object.values(FAULTS)) docker(['rmi', image], undefined, {allowFail: true})
})
beforeEach(() => {
  world = new World()
})
afterEach(() => world.cleanup())

const up = (...flags: string[]) => world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace, ...flags])
const mpsChecks = (verify: {json: {checks: {name: string; status: string; detail: string}[]}}) =>
  Object.fromEntries(verify.json.checks.filter((c) => c.name.startsWith('mps.')).map((c) => [c.name, c]))

describe('up fails when the plan needs MPS and the daemon does not run; nothing is left', () => {
  it.each([
    ['no nvidia-cuda-mps-control in the container', ['--image', FAULTS.noMpsControl.image], /no nvidia-cuda-mps-control in this container/],
    ['the daemon fails to start (-d)', ['--image', FAULTS.mpsFail.image], /nvidia-cuda-mps-control -d failed/],
  ])('%s', (_what, flags, reason) => {
    const before = world.gpuState()
    const failed = up(...flags)
    expect({exit: failed.exitCode, code: failed.json.error?.code}).toEqual({exit: 3, code: 'MPS_NOT_RUNNING'})
    expect(failed.json.error.message).toMatch(reason)
    expect(JSON.stringify(failed.json.error)).toMatch(/--no-mps/)
    expect(containersOf(world.id)).toEqual([])
    expect(world.gpuState()).toEqual(before)
    expect(world.leftovers()).toEqual({sessions: [], leases: []})
  })

  it('with --no-mps the same container comes up, planned without MPS; verify SKIPs the MPS checks', () => {
    const before = world.gpuState()
    const plain = up('--no-mps', '--image', FAULTS.noMpsControl.image)
    expect({exit: plain.exitCode, error: plain.json.error}).toEqual({exit: 0, error: undefined})
    expect({mps: plain.json.mps, planned: plain.json.plan.mps}).toEqual({mps: null, planned: null})
    expect(docker(['exec', plain.json.container.id, 'test', '-e', '/run/gpu-cosplay/mps/status'], undefined, {allowFail: true})).toBeNull()
    const verify = world.json(['verify', world.id])
    expect(Object.values(mpsChecks(verify)).map((c) => [c.name, c.status])).toEqual([
      ['mps.login_shell', 'SKIP'],
      ['mps.command', 'SKIP'],
    ])
    expect(world.json(['down', world.id]).exitCode).toBe(0)
    expect(world.gpuState()).toEqual(before)
  })
})

describe("verify holds the session's daemon to the plan, from an ssh login shell and an ssh command", () => {
  it('PASS on a good session; FAIL naming the percentage once something changed it', () => {
    const before = world.gpuState()
    const good = up()
    expect({exit: good.exitCode, error: good.json.error}).toEqual({exit: 0, error: undefined})
    const pct = good.json.mps.activeThreadPercentage
    const verified = world.json(['verify', world.id])
    const passed = mpsChecks(verified)
    expect([passed['mps.login_shell']?.status, passed['mps.command']?.status]).toEqual(['PASS', 'PASS'])
    expect(passed['mps.login_shell'].detail).toMatch(/^ssh login shell: .*CUDA_MPS_PIPE_DIRECTORY=\/run\/gpu-cosplay\/mps\/pipe/)
    expect(verified.exitCode).toBe(0)

    // the user changes the daemon's default behind the plan's back (to 100%, or 50% where the plan is 100%)
    const other = pct === 100 ? 50 : 100
    expect(world.cli(['ssh', world.id, '--', `echo set_default_active_thread_percentage ${other} | nvidia-cuda-mps-control`]).exitCode).toBe(0)
    const changed = world.json(['verify', world.id])
    expect(changed.exitCode).toBe(1)
    const failed = mpsChecks(changed)
    expect(failed['mps.login_shell']).toMatchObject({
      status: 'FAIL',
      detail: expect.stringContaining(`ssh login shell: active thread percentage is ${other}.0, planned ${pct}`),
    })
    expect(failed['mps.command']).toMatchObject({
      status: 'FAIL',
      detail: expect.stringContaining(`ssh command: active thread percentage is ${other}.0, planned ${pct}`),
    })

    expect(world.json(['down', world.id]).exitCode).toBe(0)
    expect(containersOf(world.id)).toEqual([])
    expect(world.gpuState()).toEqual(before)
  })

  it('FAIL naming the pinned limit once it was changed; without sshd both probes go through docker exec', () => {
    const good = up('--image', NO_SSHD_IMAGE)
    expect({exit: good.exitCode, error: good.json.error}).toEqual({exit: 0, error: undefined})
    const passed = mpsChecks(world.json(['verify', world.id]))
    expect([passed['mps.login_shell']?.detail, passed['mps.command']?.status]).toEqual([expect.stringMatching(/^docker exec login shell: /), 'PASS'])
    expect(world.cli(['exec', world.id, '--', 'sh', '-c', 'echo set_default_device_pinned_mem_limit 0 64G | nvidia-cuda-mps-control']).exitCode).toBe(0)
    const changed = world.json(['verify', world.id])
    expect(changed.exitCode).toBe(1)
    const failed = mpsChecks(changed)
    for (const name of ['mps.login_shell', 'mps.command']) {
      expect(failed[name]).toMatchObject({
        status: 'FAIL',
        detail: expect.stringMatching(`pinned device memory limit is 64G, planned ${good.json.mps.pinnedMemLimitMiB} MiB`),
      })
    }
    expect(world.json(['down', world.id]).exitCode).toBe(0)
  })
})
