/**
 * up --count 2 on a real Docker engine (test/e2e/run.sh, as root; every CLI call as `cosplayer`): one container with
 * both ranks' MIG devices, an MPS daemon per rank on its own device with the plan's limits, what each rank's process
 * needs to find its own device, /dev/shm sized for NCCL; `down` leaves the box as found.
 */
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {jest} from '@jest/globals'

import {buildDefaultImage, containersOf, docker, version, World} from './support.js'

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

describe('scripts for two real cards, on CPU torch with gloo', () => {
  // Debian's CPU build of torch in a cosplay image (as session.test.ts builds it)
  const TORCH_IMAGE = 'gpu-cosplay-test-torch:bookworm'
  const SPAWN_DDP = [
    'import json, os, sys, torch, torch.distributed as dist, torch.multiprocessing as mp',
    'def run(rank, world, out):',
    '    try:',
    '        torch.cuda.set_device(rank)  # as on two real cards; CPU torch refuses it after the costume chose',
    '    except (AssertionError, AttributeError):',
    '        pass',
    '    import gpu_cosplay_hook',
    '    costume = gpu_cosplay_hook.state().ranks.describe()',
    "    os.environ.update(MASTER_ADDR='127.0.0.1', MASTER_PORT='29533')",
    "    dist.init_process_group('gloo', rank=rank, world_size=world)",
    '    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 8))',
    '    model(torch.randn(4, 8)).square().mean().backward()',
    '    total = torch.ones(4)',
    '    dist.all_reduce(total)',
    "    seen = dict(costume, visible=os.environ.get('CUDA_VISIBLE_DEVICES'), pipe=os.environ.get('CUDA_MPS_PIPE_DIRECTORY'), sum=float(total[0]))",
    "    json.dump(seen, open('%s/rank-%d.json' % (out, rank), 'w'))",
    '    dist.destroy_process_group()',
    "if __name__ == '__main__':",
    '    out = sys.argv[1]',
    '    os.makedirs(out, exist_ok=True)',
    '    mp.spawn(run, args=(2, out), nprocs=2)',
    "    print(json.dumps([json.load(open('%s/rank-%d.json' % (out, r))) for r in range(2)]))",
  ].join('\n')

  it('verify --distributed (torchrun, set_device(LOCAL_RANK)) and an mp.spawn script each reach their own rank, and DDP steps', () => {
    docker(
      ['build', '-q', '-t', TORCH_IMAGE, '-'],
      `FROM gpu-cosplay:${version()}\nRUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-torch && rm -rf /var/lib/apt/lists/*\n`,
    )
    const before = world.gpuState()
    const up = world.json(['up', '3090', '--count', '2', '--name', world.id, '--workspace', world.workspace, '--image', TORCH_IMAGE])
    expect({exit: up.exitCode, error: up.json.error}).toEqual({exit: 0, error: undefined})
    const ranks: {uuid: string; mpsPipe: string}[] = up.json.ranks

    const verify = world.json(['verify', world.id, '--distributed'])
    // (a failure shows the ranks' reports)
    expect({exit: verify.exitCode, ok: verify.json.ok, error: verify.json.error, ranks: verify.json.ok ? 'ok' : verify.json.ranks}).toEqual({
      exit: 0,
      ok: true,
      error: null,
      ranks: 'ok',
    })
    expect(verify.json).toMatchObject({backend: 'gloo', kind: 'cpu', count: 2, devicesMatch: true})
    expect(verify.json.why).toMatch(/no CUDA/)
    expect(verify.json.ranks.map((r: {rank: number; uuid: string; mpsPipe: string}) => [r.rank, r.uuid, r.mpsPipe])).toEqual(
      ranks.map((r, i) => [i, r.uuid, r.mpsPipe]),
    )
    for (const r of verify.json.ranks) {
      expect(r.device).toContain('NVIDIA GeForce RTX 3090')
      expect(r.memoryLimitMiB).toBe(up.json.plan.memory.allocatorCapMiB)
      expect(r.allReduce.bytes).toBe(16 * 1024 * 1024)
      expect(r.ddpStepMs).toBeGreaterThan(0)
    }
    expect(world.cli(['verify', world.id, '--distributed']).stdout).toMatch(/2 ranks, backend gloo[\s\S]*PASS\s*$/)

    writeFileSync(join(world.workspace, 'spawn_ddp.py'), SPAWN_DDP)
    const spawned = world.cli(['exec', world.id, '--', 'python3', '/workspace/spawn_ddp.py', '/tmp/spawn-out'])
    expect({exit: spawned.exitCode, stderr: spawned.exitCode === 0 ? '' : spawned.stderr}).toEqual({exit: 0, stderr: ''})
    const seen = JSON.parse(spawned.stdout.trim().split('\n').pop()!)
    expect(seen).toEqual(ranks.map((r, rank) => ({count: 2, rank, uuid: r.uuid, mpsPipe: r.mpsPipe, visible: r.uuid, pipe: r.mpsPipe, sum: 2})))

    expect(world.json(['down', world.id]).exitCode).toBe(0)
    expect(world.gpuState()).toEqual(before)
  })
})
