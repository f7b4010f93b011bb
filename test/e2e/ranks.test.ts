/**
 * up --count 2 on a real Docker engine (test/e2e/run.sh, as root; every CLI call as `cosplayer`): one container with
 * both ranks' MIG devices, an MPS daemon per rank on its own device with the plan's limits, what each rank's process
 * needs to find its own device, /dev/shm sized for NCCL; `down` leaves the box as found.
 */
import {jest} from '@jest/globals'

import {buildDefaultImage, containersOf, docker, World} from './support.js'

jest.setTimeout(240_000)

let world: World
beforeAll(() => {
  buildDefaultImage()
})
beforeEach(() => {
  world = new World()
})
afterEach(() => world.cleanup())

describe('up 3090 --count 2 with a container', () => {
  it("holds both ranks' devices, runs a daemon per rank on its own device, and down leaves the box as found", () => {
    const before = world.gpuState()
    const up = world.json(['up', '3090', '--count', '2', '--name', world.id, '--workspace', world.workspace])
    expect({exit: up.exitCode, error: up.json.error}).toEqual({exit: 0, error: undefined})
    const ranks: {rank: number; uuid: string; mpsPipe: string}[] = up.json.ranks
    expect(ranks.map((r) => r.rank)).toEqual([0, 1])
    expect(new Set(ranks.map((r) => r.uuid)).size).toBe(2)
    expect(ranks.map((r) => r.mpsPipe)).toEqual(['/run/gpu-cosplay/mps/rank-0/pipe', '/run/gpu-cosplay/mps/rank-1/pipe'])
    const id = up.json.container.id

    // the container was given both devices, and /dev/shm for NCCL (1 GiB a rank)
    const config = JSON.parse(docker(['inspect', '--format', '{{json .HostConfig}}', id]))
    expect(config.DeviceRequests[0].DeviceIDs).toEqual(ranks.map((r) => r.uuid))
    expect(config.ShmSize).toBe(2 * 1024 ** 3)
    // nvidia-smi -L as the driver lists the container's devices (the stub hook's simulator, not the shim's costume)
    const listed = world.cli(['exec', world.id, '--', 'env', 'GPU_COSPLAY_SHIM_PASSTHROUGH=1', 'nvidia-smi', '-L'])
    for (const r of ranks) expect(listed.stdout).toContain(r.uuid)

    // a daemon per rank, each with the plan's limits, reached through its own pipe
    expect(world.cli(['exec', world.id, '--', 'cat', '/run/gpu-cosplay/mps/status']).stdout.trim()).toBe('running')
    for (const r of ranks) {
      const ask = (command: string) =>
        world.cli(['exec', world.id, '--', 'sh', '-c', `echo '${command}' | CUDA_MPS_PIPE_DIRECTORY=${r.mpsPipe} nvidia-cuda-mps-control`]).stdout.trim()
      expect(Number(ask('get_default_active_thread_percentage'))).toBe(up.json.plan.mps.activeThreadPercentage)
      // shown as the driver does: whole GiB, rounded down
      expect(ask('get_default_device_pinned_mem_limit 0')).toBe(`${Math.floor(up.json.plan.mps.pinnedMemLimitMiB / 1024)}G`)
    }

    // what a rank's process reads to find its device: in a login shell and in docker exec alike
    const rankEnv = world.cli(['ssh', world.id, '--', 'printenv GPU_COSPLAY_RANKS; printenv CUDA_VISIBLE_DEVICES; printenv CUDA_MPS_PIPE_DIRECTORY'])
    expect(rankEnv.exitCode).toBe(0)
    const [json, visible, pipe] = rankEnv.stdout.trim().split('\n')
    expect(JSON.parse(json)).toEqual(ranks.map((r) => ({uuid: r.uuid, mpsPipe: r.mpsPipe})))
    expect(visible).toBe(ranks.map((r) => r.uuid).join(','))
    expect(pipe).toBe('/run/gpu-cosplay/mps/rank-0/pipe')

    // listed once, ended whole
    const ps = world.json(['ps'])
    expect(ps.json.map((s: {name: string}) => s.name)).toEqual([world.id])
    expect(world.json(['down', world.id]).exitCode).toBe(0)
    expect(containersOf(world.id)).toEqual([])
    expect(world.gpuState()).toEqual(before)
    expect(world.leftovers()).toEqual({sessions: [], leases: []})
  })
})
