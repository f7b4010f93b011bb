/**
 * A --host client runs `up` on the box with GPU_COSPLAY_CANCEL_ON_EOF=1 and its stdin open; a client that goes
 * away only closes that stdin (no pty, no SIGHUP). Here the box side runs locally: EOF must act as Ctrl-C.
 */
import {spawn} from 'node:child_process'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {BIN, cleanupTemps, type Env, runJson, Sim} from './support/run-cli.js'
import {freshHost} from './support/crash-points.js'
import {gpuState, mutatingCalls, waitForCall} from './support/run-cli-async.js'

afterAll(cleanupTemps)

const UP = ['up', '1650', '--match', 'fp32', '--no-container', '--name', 'remote-victim', '--json']

function startWithStdin(env: Env) {
  const child = spawn(process.execPath, [BIN, ...UP], {env: env as NodeJS.ProcessEnv, stdio: ['pipe', 'pipe', 'pipe']})
  let stdout = ''
  child.stdout.on('data', (d) => (stdout += d))
  const done = new Promise<{exitCode: number | null; stdout: string}>((resolve) => child.on('close', (exitCode) => resolve({exitCode, stdout})))
  return {closeStdin: () => child.stdin.end(), done}
}

async function closeStdinDuringCreate(env: Env, sim: Sim) {
  sim.set('faults', [{at: 1, action: 'delay', seconds: 1.5, match: '-cgi'}])
  const running = startWithStdin(env)
  await waitForCall(sim, (c) => c.argv.includes('-mig'))
  // the journal names a step before it acts: once create-gi is there, the (delayed) create is in flight
  await waitForJournal(String(env.GPU_COSPLAY_STATE_DIR), 'create-gi')
  running.closeStdin()
  return running.done
}

async function waitForJournal(stateDir: string, kind: string): Promise<void> {
  const dir = join(stateDir, 'gpus')
  for (let i = 0; i < 400; i++) {
    const books = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')) : []
    if (books.some((f) => readFileSync(join(dir, f), 'utf8').includes(`"${kind}"`))) return
    await new Promise((r) => setTimeout(r, 10))
  }
  throw new Error(`the journal never named ${kind}`)
}

describe('EOF on stdin under GPU_COSPLAY_CANCEL_ON_EOF=1', () => {
  it('finishes the step in flight, undoes everything and fails with INTERRUPTED', async () => {
    const sim = freshHost()
    const env = sim.env({GPU_COSPLAY_CANCEL_ON_EOF: '1'})
    const before = gpuState(sim)
    const result = await closeStdinDuringCreate(env, sim)
    expect(result.exitCode).toBe(3)
    expect(JSON.parse(result.stdout).error.code).toBe('INTERRUPTED')
    const calls = mutatingCalls(sim).map((argv) => argv.join(' '))
    // the create that was in flight completed, then was destroyed by ID
    expect(calls.some((c) => c.includes('-cgi'))).toBe(true)
    expect(calls.some((c) => c.includes('-dgi'))).toBe(true)
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(['ps'], env).json).toEqual([])
  }, 30_000)

  it('means nothing without the variable: an interactive user may close stdin', async () => {
    const sim = Sim.create('h200', 1)
    const env = sim.env()
    const result = await closeStdinDuringCreate(env, sim)
    expect(result.exitCode).toBe(0)
    expect(JSON.parse(result.stdout).name).toBe('remote-victim')
  }, 30_000)
})
