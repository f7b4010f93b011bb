import {execFileSync} from 'node:child_process'
import {chmodSync, existsSync, lstatSync, readFileSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {cleanupTemps, runCli, runJson, Sim, tempDir} from '../support/run-cli.js'
import {gpuState} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

function oneLineError(stderr: string): void {
  expect(
    stderr
      .trim()
      .split('\n')
      .filter((l) => !/^Applying|^Ending|^Resetting/.test(l)),
  ).toHaveLength(1)
  expect(stderr).not.toMatch(/\n\s+at /)
}

describe('bad input and bad states leave the GPU untouched', () => {
  it('unknown session name', () => {
    const sim = Sim.create('h200', 1)
    const env = sim.env()
    expect(runCli(['up', 't4', '--no-container', '--name', 'real'], env).exitCode).toBe(0)
    const before = gpuState(sim)
    const result = runJson(['down', 'real', 'nope'], env)
    expect(result.exitCode).toBe(2)
    expect(result.json.error.code).toBe('UNKNOWN_SESSION')
    // names are all checked first: "real" was not ended either
    expect(gpuState(sim)).toEqual(before)
    oneLineError(runCli(['down', 'nope'], env).stderr)
  }, 30_000)

  it('Docker unreachable: the GPU is read, never changed, and the name is free again', () => {
    // up settles Docker while it reads the GPU under its lock (the tests' DOCKER_HOST points nowhere)
    const sim = Sim.create('h200', 1)
    const env = sim.env()
    const before = gpuState(sim)
    const result = runJson(['up', '3090', '--name', 'no-docker'], env)
    expect(result.exitCode).toBe(5)
    expect(result.json.error.code).toBe('DOCKER_UNREACHABLE')
    expect(sim.calls().some((c) => c.argv[0] === '-q')).toBe(true)
    expect(gpuState(sim)).toEqual(before)
    oneLineError(runCli(['up', '3090', '--name', 'no-docker'], env).stderr)
    expect(runCli(['up', 't4', '--no-container', '--name', 'no-docker'], env).exitCode).toBe(0)
  }, 30_000)

  it('a GPU whose MIG mode is pending a reset', () => {
    const sim = Sim.create('h200', 1).set('gpus.0.mig_pending', true)
    const before = gpuState(sim)
    const result = runJson(['up', 't4', '--no-container'], sim.env())
    expect(result.exitCode).toBe(3)
    expect(result.json.error.code).toBe('MIG_PENDING_RESET')
    expect(gpuState(sim)).toEqual(before)
  }, 30_000)

  it('MIG mode cannot be turned on because processes use the GPU', () => {
    const sim = Sim.create('h200', 1).set('gpus.0.processes', [{pid: 4242, name: 'python3', used_mib: 1000, gi: null, ci: null}])
    const before = gpuState(sim)
    const result = runJson(['up', 't4', '--no-container'], sim.env())
    expect(result.exitCode).toBe(3)
    expect(result.json.error.code).toBe('GPU_BUSY')
    expect(gpuState(sim)).toEqual(before)
  }, 30_000)

  it('the driver refuses MIG mode (in use by another client): rolled back, clear error', () => {
    const sim = Sim.create('h200', 1).set('gpus.0.persistence', false)
    const before = gpuState(sim)
    sim.set('faults', [
      {at: 1, action: 'fail', match: '-mig 1', exit: 255, message: 'Unable to enable MIG Mode for GPU 00000000:03:00.0: In use by another client'},
    ])
    const result = runJson(['up', 't4', '--no-container'], sim.env())
    expect(result.exitCode).toBe(3)
    expect(result.json.error.code).toBe('GPU_IN_USE')
    sim.set('faults', [])
    expect(gpuState(sim)).toEqual(before)
  }, 30_000)

  it('a corrupt or truncated journal is reported, not dropped, and nothing changes', () => {
    const sim = Sim.create('h200', 1)
    const env = sim.env()
    expect(runCli(['up', 't4', '--no-container', '--name', 'a'], env).exitCode).toBe(0)
    const book = join(env.GPU_COSPLAY_STATE_DIR!, 'gpus', `${sim.state().gpus[0].uuid}.json`)
    const text = readFileSync(book, 'utf8')
    writeFileSync(book, text.slice(0, Math.floor(text.length / 2)))
    const before = gpuState(sim)
    for (const args of [['up', '2060', '--no-container'], ['down', 'a'], ['recover']]) {
      const result = runJson(args, env)
      expect({args, exit: result.exitCode, code: result.json.error?.code}).toEqual({args, exit: 3, code: 'JOURNAL_CORRUPT'})
    }
    expect(gpuState(sim)).toEqual(before)
    expect(readFileSync(book, 'utf8')).toBe(text.slice(0, Math.floor(text.length / 2)))
    // The way out that the error names: reset moves it aside and restores driver defaults.
    const reset = runJson(['reset', '--host-gpu', '0', '--yes'], env)
    expect(reset.exitCode).toBe(0)
    expect(reset.json.mode).toBe('driver-defaults')
    expect(existsSync(reset.json.movedAside)).toBe(true)
  }, 30_000)

  it('a symlink planted at another GPU’s book: skipped and reported, never followed; only that GPU fails', () => {
    const sim = Sim.create('h200', 2)
    const env = sim.env()
    expect(runCli(['up', 't4', '--no-container', '--name', 'a'], env).exitCode).toBe(0)
    const shadow = join(tempDir(), 'shadow') // stands for /etc/shadow
    writeFileSync(shadow, 'root:secret\n', {mode: 0o600})
    const planted = join(env.GPU_COSPLAY_STATE_DIR!, 'gpus', `${sim.state().gpus[1].uuid}.json`)
    symlinkSync(shadow, planted)
    const status = runJson(['status'], env)
    expect(status.exitCode).toBe(0)
    expect(status.json.sessions.map((s: {name: string}) => s.name)).toEqual(['a'])
    expect(status.json.refusedFiles).toEqual([expect.objectContaining({file: planted, reason: 'symlink'})])
    expect(runCli(['status'], env).stdout).toMatch(/REFUSED .*is a symlink/)
    const doctor = runJson<{checks: {name: string; status: string}[]}>(['doctor'], env)
    expect(doctor.json.checks.find((c) => c.name === 'state directory')?.status).toBe('warn')
    const other = runJson(['up', 't4', '--no-container', '--host-gpu', '1'], env)
    expect({exit: other.exitCode, code: other.json.error?.code}).toEqual({exit: 3, code: 'UNSAFE_STATE_FILE'})
    expect(runCli(['down', 'a'], env).exitCode).toBe(0)
    expect(readFileSync(shadow, 'utf8')).toBe('root:secret\n')
    expect(statSync(shadow).mode & 0o7777).toBe(0o600)
    expect(lstatSync(planted).isSymbolicLink()).toBe(true)
  }, 60_000)

  it('state directory not writable', () => {
    const sim = Sim.create('h200', 1)
    const before = gpuState(sim)
    const result = runJson(['up', 't4', '--no-container'], sim.env({GPU_COSPLAY_STATE_DIR: '/proc/version/state'}))
    expect(result.exitCode).toBe(4)
    expect(result.json.error.code).toBe('STATE_DIR_NOT_WRITABLE')
    expect(gpuState(sim)).toEqual(before)
  }, 30_000)

  it('nvidia-smi refuses a change for lack of permission: rolled back, exit 4', () => {
    const sim = Sim.create('h200', 1).set('require_root', true)
    const before = gpuState(sim)
    const result = runJson(['up', 't4', '--no-container'], sim.env({GPU_COSPLAY_SIM_EUID: '1000'}))
    expect(result.exitCode).toBe(4)
    expect(result.json.error.code).toBe('SMI_PERMISSION')
    expect(gpuState(sim)).toEqual(before)
  }, 30_000)

  const canSwitchUser = process.getuid?.() === 0 && existsSync('/usr/bin/sudo') && existsSync('/usr/sbin/runuser')
  ;(canSwitchUser ? it : it.skip)(
    'a user whose sudo needs a password is stopped before anything changes',
    () => {
      const sim = Sim.create('h200', 1)
      const before = gpuState(sim)
      const state = tempDir()
      chmodSync(state, 0o777)
      chmodSync(sim.dir, 0o777)
      const env = sim.env({GPU_COSPLAY_STATE_DIR: state})
      const argv = ['-u', 'nobody', '--', process.execPath, join(process.cwd(), 'bin/run.js'), 'up', 't4', '--no-container', '--json']
      let stdout = ''
      let status = 0
      try {
        stdout = execFileSync('runuser', argv, {env: env as NodeJS.ProcessEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']})
      } catch (error) {
        stdout = (error as {stdout: string}).stdout
        status = (error as {status: number}).status
      }
      expect(status).toBe(4)
      expect(JSON.parse(stdout).error.code).toBe('NO_GPU_PRIVILEGES')
      expect(gpuState(sim)).toEqual(before)
    },
    30_000,
  )

  it('reset without --yes refuses; with --yes ends every session from the journal and restores', () => {
    const sim = Sim.create('h200', 1).set('gpus.0.power_limit', 650)
    const env = sim.env()
    const before = gpuState(sim)
    expect(runCli(['up', 't4', '--no-container', '--name', 'a'], env).exitCode).toBe(0)
    expect(runCli(['up', '2060', '--no-container', '--name', 'b'], env).exitCode).toBe(0)
    expect(runJson(['reset'], env).json.error.code).toBe('CONFIRMATION_REQUIRED')
    const reset = runJson(['reset', '--host-gpu', '0', '--yes'], env)
    expect(reset.exitCode).toBe(0)
    expect(reset.json.endedSessions.sort()).toEqual(['a', 'b'])
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(['ps'], env).json).toEqual([])
  }, 30_000)
})
