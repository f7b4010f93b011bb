import {spawn, spawnSync} from 'node:child_process'
import {chmodSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {loadAll} from 'js-yaml'

import {BIN, cleanupTemps, type Env, runCli, runJson, Sim, tempDir} from '../support/run-cli.js'
import {gpuState, waitForCall} from '../support/run-cli-async.js'

afterAll(cleanupTemps)

// The exports' lease calls, run as a cluster runs them: the Slurm Prolog and Epilog scripts and the Kubernetes
// DaemonSet's shell script, with `gpu-cosplay` on PATH, against the simulated GPU. The plan for a 3090 on an H200
// needs a 350 W power limit (below the H200's 700 W default), so both exports hold one.

/** The environment of a node: the simulator, and a `gpu-cosplay` on PATH that is this build. */
function nodeEnv(sim: Sim, extra: Env = {}): Env {
  const bin = tempDir('gpu-cosplay-bin-')
  const shim = join(bin, 'gpu-cosplay')
  writeFileSync(shim, `#!/bin/sh\nexec '${process.execPath}' '${BIN}' "$@"\n`)
  chmodSync(shim, 0o755)
  const env = sim.env(extra)
  return {...env, PATH: `${bin}:${env.PATH}`}
}

function slurmPart(text: string, name: string): string {
  const start = text.indexOf(`# ==> ${name} <==\n`)
  expect(start).toBeGreaterThanOrEqual(0)
  const body = text.slice(start).split('\n').slice(1)
  const end = body.findIndex((line) => line.startsWith('# ==> '))
  return body.slice(0, end === -1 ? undefined : end).join('\n')
}

describe('the Slurm Prolog and Epilog', () => {
  const exported = runCli(['plan', '3090', '--on', 'h200', '-o', 'slurm']).stdout
  const prolog = slurmPart(exported, '/etc/slurm/gpu-cosplay-prolog.sh')
  const epilog = slurmPart(exported, '/etc/slurm/gpu-cosplay-epilog.sh')
  const run = (script: string, env: Env) => spawnSync('sh', ['-c', script], {env: env as NodeJS.ProcessEnv, encoding: 'utf8', timeout: 30_000})

  it('the Prolog holds the power limit for the job, the Epilog restores it; both exit 0', () => {
    const sim = Sim.create('h200', 1).set('gpus.0.power_limit', 650)
    const env = nodeEnv(sim, {SLURM_JOB_ID: '4242'})
    const before = gpuState(sim)
    expect(prolog).toContain('lease hold')

    expect(run(prolog, env).status).toBe(0)
    expect(sim.state().gpus[0].power_limit).toBe(350)
    expect(runJson(['ps'], env).json.map((s: any) => s.name)).toEqual(['lease:slurm-job-4242'])

    expect(run(epilog, env).status).toBe(0)
    expect(gpuState(sim)).toEqual(before)
    // an Epilog run twice (requeue, a retried cleanup) is harmless
    expect(run(epilog, env).status).toBe(0)
  }, 60_000)

  it('a Prolog whose lease is refused still exits 0 and leaves the GPU as it was', () => {
    const sim = Sim.create('h200', 1)
    const env = nodeEnv(sim, {SLURM_JOB_ID: '7'})
    expect(runCli(['lease', 'hold', '--power-limit-w', '300', '--holder', 'admin'], env).exitCode).toBe(0)
    const held = gpuState(sim)
    const result = run(prolog, env)
    expect(result.status).toBe(0)
    expect(result.stderr).toMatch(/admin/)
    expect(gpuState(sim)).toEqual(held)
  }, 60_000)
})

describe('the Kubernetes lease DaemonSet', () => {
  it('holds the lease while it runs and releases it on SIGTERM', async () => {
    const exported = runCli(['plan', '3090', '--on', 'h200', '-o', 'k8s']).stdout
    const daemonSet = (loadAll(exported) as any[]).find((d) => d?.kind === 'DaemonSet')
    const [shell, flag, script] = daemonSet.spec.template.spec.containers[0].command
    const sim = Sim.create('h200', 1).set('gpus.0.power_limit', 650)
    const env = nodeEnv(sim)
    const before = gpuState(sim)

    const pod = spawn(shell, [flag, script], {env: env as NodeJS.ProcessEnv, detached: true, stdio: 'ignore'})
    const exited = new Promise<number | null>((resolve) => pod.on('exit', (code) => resolve(code)))
    try {
      await waitForCall(sim, (c) => c.argv.includes('-pl'))
      let held: any[] = []
      for (let i = 0; i < 100 && held[0]?.phase !== 'active'; i++) {
        await new Promise((r) => setTimeout(r, 100))
        held = runJson(['ps'], env).json
      }
      expect(held[0]).toMatchObject({kind: 'lease', phase: 'active', lease: {holder: 'k8s-gpu-cosplay-lease-rtx-3090', powerLimitW: 350}})
      expect(sim.state().gpus[0].power_limit).toBe(350)

      pod.kill('SIGTERM')
      expect(await exited).toBe(0)
      expect(gpuState(sim)).toEqual(before)
      expect(runJson(['ps'], env).json).toEqual([])
    } finally {
      // the script's `sleep` runs in its process group
      try {
        process.kill(-pod.pid!, 'SIGKILL')
      } catch {
        // gone
      }
    }
  }, 60_000)
})
