/**
 * Real Docker end to end (run by test/e2e/run.sh as root; every CLI call runs as the non-root `cosplayer`):
 * the cosplay image built by the tool on the local Debian base, `up 3090` on a simulated H200, ssh and exec
 * into it, verify, a BYO image without sshd, `down`, a kill -9 mid-`up` then `recover`, and Docker down.
 */
import {spawnSync} from 'node:child_process'
import {statSync, writeFileSync} from 'node:fs'
import {jest} from '@jest/globals'
import {join} from 'node:path'

import {baseImageFor, defaultImageTag} from '../../src/container/cosplay-image.js'
import {BASE_IMAGE, containersOf, docker, NO_SSHD_IMAGE, UID, USER, version, waitFor, World} from './support.js'

jest.setTimeout(180_000)

let world: World
beforeEach(() => {
  world = new World()
})
afterEach(() => world.cleanup())

beforeAll(() => {
  // a "bring your own" image: the Debian base with sshd taken out, no cosplay label
  docker(['build', '-q', '-t', NO_SSHD_IMAGE, '-'], `FROM ${BASE_IMAGE}\nRUN rm -f /usr/sbin/sshd\n`)
})

describe('build', () => {
  it('the first up builds the cosplay image before any GPU change and outside the GPU lock, then starts the session', () => {
    const tag = defaultImageTag(version())
    const defaultBase = baseImageFor({})
    docker(['image', 'rm', tag], undefined, {allowFail: true})
    // the Dockerfile's default base, offline: the local Debian base under its name
    const tagged = docker(['image', 'inspect', defaultBase], undefined, {allowFail: true}) === null
    if (tagged) docker(['tag', BASE_IMAGE, defaultBase])
    try {
      const up = world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace, '--cap-power'])
      expect(up.exitCode).toBe(0)
      expect(up.json.container.builtImage).toBe(true)
      // bring-up read the GPU under its lock, gave up unchanged for the build, then read it again
      const calls = world.calls()
      const reads = calls.flatMap((argv, i) => (argv.startsWith('-q') ? [i] : []))
      expect(reads).toHaveLength(2)
      const firstChange = calls.findIndex((argv) => world.mutatingCalls().includes(argv))
      expect(firstChange).toBeGreaterThan(reads[1])
      // the GPU-wide power cap it asked for is set while the container boots
      const kinds = world.journalKinds(world.id)
      expect(kinds.slice(kinds.indexOf('create-gi'))).toEqual(['create-gi', 'start-container', 'set-power-limit'])
      expect(world.cli(['ssh', world.id, '--', 'printenv', 'GPU_COSPLAY_NAME']).stdout.trim()).toBe('NVIDIA GeForce RTX 3090')
      expect(world.json(['down', world.id]).exitCode).toBe(0)
    } finally {
      if (tagged) docker(['image', 'rm', defaultBase], undefined, {allowFail: true})
    }
  })

  it('builds the cosplay image on a local base, as the non-root user', () => {
    const built = world.json(['build', '--base', BASE_IMAGE])
    expect(built.exitCode).toBe(0)
    expect(built.json.base).toBe(BASE_IMAGE)
    expect(built.json.addedBytes).toBeGreaterThan(0)
    const labels = JSON.parse(docker(['image', 'inspect', '-f', '{{json .Config.Labels}}', built.json.tag]))
    expect(labels['io.gpu-cosplay.image']).toBe('1')
  })

  it('fails clearly on a build error', () => {
    const failed = world.json(['build', '--base', 'gpu-cosplay-test-no-such-base:none', '--tag', 'gpu-cosplay-test:broken'])
    expect(failed.exitCode).toBe(5)
    expect(failed.json.error.code).toBe('IMAGE_BUILD_FAILED')
  })
})

describe('a session', () => {
  it('up 3090, reached over ssh and exec as the user, verified, then down leaves nothing', () => {
    const before = world.gpuState()
    const up = world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace])
    expect(up.json.error).toBeUndefined()
    expect(up.exitCode).toBe(0)
    expect(up.json.container.sshPort).toEqual(expect.any(Number))
    expect(up.json.container.user).toBe('cosplayer')
    expect(up.json.container.connect.ssh).toContain(`-p ${up.json.container.sshPort}`)
    expect(containersOf(world.id)).toHaveLength(1)
    const labels = JSON.parse(docker(['inspect', '-f', '{{json .Config.Labels}}', up.json.container.id]))
    expect(labels).toMatchObject({'io.gpu-cosplay.session': world.id, 'io.gpu-cosplay.owner': String(UID), 'io.gpu-cosplay.mig-uuid': up.json.mig.uuid})

    expect(world.cli(['ssh', world.id, '--', 'id', '-u']).stdout.trim()).toBe(String(UID))
    // the container grants no root: no sudo, no-new-privileges, no capabilities, and a setuid file made in the
    // workspace is the user's, not root's
    expect(up.json.container).toMatchObject({
      sudo: false,
      unprivileged: false,
      imageId: expect.stringMatching(/^sha256:/),
      hostKey: expect.stringMatching(/^ssh-/),
    })
    expect(world.cli(['ssh', world.id, '--', 'sudo -n true']).exitCode).not.toBe(0)
    expect(world.cli(['ssh', world.id, '--', 'grep NoNewPrivs /proc/self/status']).stdout).toMatch(/NoNewPrivs:\s+1/)
    expect(world.cli(['ssh', world.id, '--', 'grep CapEff /proc/self/status']).stdout).toMatch(/CapEff:\s+0{16}\b/)
    expect(world.cli(['ssh', world.id, '--', 'cp /bin/sh /workspace/suid-sh && chmod u+s /workspace/suid-sh']).exitCode).toBe(0)
    const suid = statSync(join(world.workspace, 'suid-sh'))
    expect({uid: suid.uid, setuid: (suid.mode & 0o4000) !== 0}).toEqual({uid: UID, setuid: true})
    const created = JSON.parse(docker(['inspect', '-f', '{{json .HostConfig}}', up.json.container.id]))
    expect(created).toMatchObject({
      CapDrop: ['ALL'],
      CapAdd: ['CHOWN', 'SETUID', 'SETGID', 'SYS_CHROOT', 'AUDIT_WRITE'],
      SecurityOpt: ['no-new-privileges:true'],
    })
    expect(docker(['inspect', '-f', '{{.Image}}', up.json.container.id]).trim()).toBe(up.json.container.imageId)
    // NAME may be left out: the user has one session
    expect(world.cli(['ssh', '--', 'printenv', 'GPU_COSPLAY_NAME']).stdout.trim()).toBe('NVIDIA GeForce RTX 3090')
    expect(world.cli(['ssh', world.id, '--', 'exit 7']).exitCode).toBe(7)
    expect(world.cli(['ssh', world.id, '--', 'echo hi > /workspace/from-ssh.txt']).exitCode).toBe(0)
    expect(statSync(join(world.workspace, 'from-ssh.txt')).uid).toBe(UID)

    const printed = world.cli(['exec', world.id, '--', 'printenv', 'GPU_COSPLAY_NAME'])
    expect({out: printed.stdout.trim(), err: printed.stderr, code: printed.exitCode}).toEqual({out: 'NVIDIA GeForce RTX 3090', err: '', code: 0})
    expect(world.cli(['exec', '--', 'id', '-u']).stdout.trim()).toBe(String(UID))
    expect(world.cli(['exec', world.id, '--', 'sh', '-c', 'exit 3']).exitCode).toBe(3)
    const smi = world.cli(['exec', world.id, '--', 'nvidia-smi', '-L'])
    expect(smi.exitCode).toBe(0)
    expect(smi.stdout).toContain('NVIDIA GeForce RTX 3090')
    expect(smi.stdout).not.toMatch(/MIG|H200/)

    const verify = world.json(['verify', world.id])
    expect(verify.exitCode).toBe(0)
    const status = Object.fromEntries(verify.json.checks.map((c: any) => [c.name, c.status]))
    expect(status).toMatchObject({env: 'PASS', user: 'PASS', 'shim.shadows': 'PASS', 'shim.output': 'PASS', 'hook.loaded': 'PASS', torch: 'SKIP'})
    expect(verify.json.summary.FAIL).toBe(0)

    // the plain ssh line up printed pins the key too (its known_hosts file was written by up)
    const plain = spawnSync('runuser', ['-u', USER, '--', 'sh', '-c', `${up.json.container.connect.ssh} id -u`], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    expect({out: plain.stdout.trim(), err: plain.stderr}).toEqual({out: String(UID), err: ''})
    const config = world.json(['ssh-config'])
    expect(config.json.entry).toContain(`Port ${up.json.container.sshPort}`)
    expect(config.json.hostKey).toBe(up.json.container.hostKey)
    // the real OpenSSH client, as the user, through the entry: the recorded host key is pinned, strictly
    const entryFile = join(world.home, 'ssh_config')
    writeFileSync(entryFile, `${config.json.entry}\n`)
    const viaOpenSsh = spawnSync('runuser', ['-u', USER, '--', 'ssh', '-F', entryFile, '-o', 'BatchMode=yes', config.json.host, 'id -u'], {encoding: 'utf8'})
    expect({out: viaOpenSsh.stdout.trim(), err: viaOpenSsh.stderr}).toEqual({out: String(UID), err: ''})
    // a login shell on a pty (sshd writes its audit record then: AUDIT_WRITE)
    const onPty = spawnSync('runuser', ['-u', USER, '--', 'ssh', '-tt', '-F', entryFile, '-o', 'BatchMode=yes', config.json.host, 'tty'], {encoding: 'utf8'})
    expect({out: onPty.stdout.trim(), code: onPty.status}).toEqual({out: expect.stringMatching(/^\/dev\/pts\/\d+$/), code: 0})
    // another key on file for the alias: OpenSSH refuses to connect
    writeFileSync(config.json.knownHostsFile, `${config.json.host} ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBXjYQ5dpTR3ynx2PsTpvmLUh+5pWz16eOu3kD3YdvJ1\n`)
    const spoofed = spawnSync('runuser', ['-u', USER, '--', 'ssh', '-F', entryFile, '-o', 'BatchMode=yes', config.json.host, 'true'], {encoding: 'utf8'})
    expect(spoofed.status).toBe(255)

    // a fit report line as the hook writes it, read from the workspace on the host
    world.cli(['exec', world.id, '--', 'mkdir', '-p', '/workspace/.gpu-cosplay'])
    const line = {pid: 42, argv: ['train.py'], peakReservedBytes: 30 * 2 ** 30, peakAllocatedBytes: 20 * 2 ** 30, capBytes: 24 * 2 ** 30, t: 1}
    writeFileSync(join(world.workspace, '.gpu-cosplay', 'fit.jsonl'), `${JSON.stringify(line)}\n`)
    const report = world.json(['report'])
    expect(report.json.rows).toEqual([expect.objectContaining({pid: 42, fits: false, headroomBytes: -6 * 2 ** 30})])

    const down = world.json(['down', world.id])
    expect(down.exitCode).toBe(0)
    expect(containersOf(world.id)).toEqual([])
    expect(world.gpuState()).toEqual(before)
    expect(world.leftovers()).toEqual({sessions: [], leases: []})
  })

  it('up --sudo gives the session user sudo (outside the engine: that user has Docker already)', () => {
    const up = world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace, '--sudo'])
    expect(up.exitCode).toBe(0)
    expect(up.json.container.sudo).toBe(true)
    expect(world.cli(['ssh', world.id, '--', 'sudo -n id -u']).stdout.trim()).toBe('0')
    expect(world.json(['down', world.id]).exitCode).toBe(0)
    expect(containersOf(world.id)).toEqual([])
  })

  it('a BYO image without sshd works through docker exec', () => {
    const before = world.gpuState()
    const up = world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace, '--image', NO_SSHD_IMAGE])
    expect(up.exitCode).toBe(0)
    expect(up.json.container.sshPort).toBeNull()
    expect(world.cli(['ssh', world.id, '--', 'id', '-u']).stdout.trim()).toBe(String(UID))
    const printed = world.cli(['exec', world.id, '--', 'printenv', 'GPU_COSPLAY_NAME'])
    expect({out: printed.stdout.trim(), err: printed.stderr, code: printed.exitCode}).toEqual({out: 'NVIDIA GeForce RTX 3090', err: '', code: 0})
    // the bind-mounted shim is first on PATH for exec too
    expect(world.cli(['exec', world.id, '--', 'nvidia-smi', '-L']).stdout).toContain('NVIDIA GeForce RTX 3090')
    expect(world.json(['ssh-config', world.id]).json.error.code).toBe('NO_SSHD')
    expect(world.json(['down', world.id]).exitCode).toBe(0)
    expect(containersOf(world.id)).toEqual([])
    expect(world.gpuState()).toEqual(before)
  })
})

describe('the costume with real torch', () => {
  // Debian's CPU build of torch in a cosplay image: the hook must never break `import torch`, and it loads.
  const TORCH_IMAGE = 'gpu-cosplay-test-torch:bookworm'

  it('imports torch with the hook active in a session, and verify runs', () => {
    const built = world.json(['build', '--base', BASE_IMAGE])
    expect(built.exitCode).toBe(0)
    docker(
      ['build', '-q', '-t', TORCH_IMAGE, '-'],
      `FROM ${built.json.tag}\nRUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-torch && rm -rf /var/lib/apt/lists/*\n`,
    )
    const up = world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace, '--image', TORCH_IMAGE])
    expect({exit: up.exitCode, error: up.json.error}).toEqual({exit: 0, error: undefined}) // a failure shows its error
    const probe = world.cli([
      'exec',
      world.id,
      '--',
      'python3',
      '-c',
      "import sys, torch; print(torch.__version__); print('gpu_cosplay_hook' in sys.modules); print(torch.cuda.is_available())",
    ])
    expect(probe.exitCode).toBe(0)
    const [version, hookLoaded, cuda] = probe.stdout.trim().split('\n')
    expect(version).toMatch(/^\d+\.\d+/)
    expect(hookLoaded).toBe('True')
    expect(cuda).toBe('False')
    const verify = world.json(['verify', world.id])
    expect(verify.json.summary.FAIL).toBe(0)
    expect(world.json(['down', world.id]).exitCode).toBe(0)
  })

  it('verify --perf --cpu measures with CPU torch in the session, labelled CPU, held to the stored plan; without --cpu CUDA is required', () => {
    const built = world.json(['build', '--base', BASE_IMAGE])
    docker(
      ['build', '-q', '-t', TORCH_IMAGE, '-'],
      `FROM ${built.json.tag}\nRUN apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-torch && rm -rf /var/lib/apt/lists/*\n`,
    )
    const up = world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace, '--image', TORCH_IMAGE])
    expect(up.exitCode).toBe(0)
    // the session has a (simulated) GPU and CPU torch: asked for CUDA, verify fails and says why
    const noCuda = world.json(['verify', world.id, '--perf'])
    expect([noCuda.json.error.code, noCuda.exitCode]).toEqual(['PERF_NO_CUDA', 1])
    expect(noCuda.json.error.message).toContain('CUDA could not be used')
    const perf = world.json(['verify', world.id, '--perf', '--cpu'])
    expect(perf.exitCode).toBe(0)
    const r = perf.json
    expect(r.session).toBe(world.id)
    expect(r.device).toEqual({name: expect.any(String), kind: 'cpu', driver: null})
    expect(Object.keys(r.axes)).toEqual(['fp32', 'bf16', 'bandwidth', 'vram'])
    for (const axis of ['fp32', 'bf16', 'bandwidth', 'vram']) {
      expect(Object.keys(r.axes[axis]).sort()).toEqual([
        'expectedCalibrated',
        'expectedMeasured',
        'expectedPeak',
        'measured',
        'reference',
        'target',
        'unit',
        'verdict',
        'vsReferencePct',
      ])
      expect(r.axes[axis].verdict).toBe('SKIP')
      expect(r.axes[axis].expectedCalibrated).toBeNull()
      expect(r.axes[axis].vsReferencePct).toBeNull() // a CPU figure is held to no card
    }
    for (const axis of ['fp32', 'bf16', 'bandwidth']) expect(r.axes[axis].measured).toBeGreaterThan(0)
    // the expectations come from the plan `up` stored, the target from the catalog
    expect(r.axes.fp32.expectedPeak).toBe(up.json.plan.expected.fp32Tflops)
    expect(r.axes.bandwidth.expectedPeak).toBe(up.json.plan.expected.bandwidthGBs)
    expect(r.axes.vram).toMatchObject({measured: null, expectedPeak: 24, target: 24})
    expect(r.axes.fp32.target).toBeCloseTo(35.58, 2)
    // the 3090 has measured references, and the H200's rates are known: the plan's measured expectation holds
    expect(r.expectation.basis).toBe('measured')
    expect(r.axes.fp32.expectedMeasured).toEqual(expect.any(Number))
    expect(r.calibration).toBeNull()
    expect(r.summary).toEqual({PASS: 0, WARN: 0, FAIL: 0, SKIP: 4})
    // sampled through the shim with its rewrite passed through: the simulated GPU's own power limit
    expect(r.samples.source).toBe('nvidia-smi')
    expect(r.samples.count).toBeGreaterThan(0)
    expect(r.samples.rows[0].powerLimitW).toBe(JSON.parse(world.smi(['--sim-dump'])).gpus[0].power_limit)
    const text = world.cli(['verify', world.id, '--perf', '--cpu'])
    expect(text.exitCode).toBe(0)
    expect(text.stdout).toContain('CPU (measured on purpose, --cpu)')
    expect(world.json(['down', world.id]).exitCode).toBe(0)
  })
})

describe('failures', () => {
  type GpuState = {powerLimitW: number}
  // where up is paused (GPU_COSPLAY_TEST_PAUSE_AFTER_STEP) and killed, and how the test sees it got there
  const killPoints = [
    {at: 'after the container was created', step: 'start-container', flags: [], reached: () => containersOf(world.id).length === 1},
    {
      at: 'once the power cap is set while the container boots',
      step: 'set-power-limit',
      flags: ['--cap-power'],
      reached: (before: GpuState) => (world.gpuState() as GpuState).powerLimitW !== before.powerLimitW,
    },
  ]
  it.each(killPoints)('kill -9 $at, then recover: container gone, GPU restored', async ({step, flags, reached}) => {
    const before = world.gpuState() as GpuState
    const running = world.start(['up', '3090', '--name', world.id, '--workspace', world.workspace, ...flags], {GPU_COSPLAY_TEST_PAUSE_AFTER_STEP: step})
    await waitFor(() => reached(before), 60_000)
    running.kill()
    await running.done
    expect(containersOf(world.id)).toHaveLength(1)
    const recovered = world.json(['recover'])
    expect(recovered.exitCode).toBe(0)
    expect(recovered.json.gpus[0].recovered).toEqual([world.id])
    expect(containersOf(world.id)).toEqual([])
    expect(world.gpuState()).toEqual(before)
    expect(world.leftovers()).toEqual({sessions: [], leases: []})
  })

  it('Docker unreachable: one clear error before any GPU change', () => {
    const up = world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace], {DOCKER_HOST: 'unix:///nonexistent/gpu-cosplay-e2e.sock'})
    expect(up.exitCode).toBe(5)
    expect(up.json.error.code).toBe('DOCKER_UNREACHABLE')
    expect(world.mutatingCalls()).toEqual([])
    expect(world.leftovers()).toEqual({sessions: [], leases: []})
  })
})
