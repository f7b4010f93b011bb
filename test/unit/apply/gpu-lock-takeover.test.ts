/**
 * Taking over the lock of a holder killed on this host, with real files and real processes: the holder is a child
 * process killed with SIGKILL, the waiters are child processes too. The dead lock's mtime is pushed an hour into
 * the future, so the mtime rule can never free it: only the pid rule can.
 */
import {type ChildProcess, spawn} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {buildSync} from 'esbuild'

import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

const ROOT = process.cwd()
const UUID = 'GPU-00000000-0000-0000-0000-000000000001'
let work: string
let runner: string

beforeAll(() => {
  // Children run the real module, bundled; it sits under node_modules so that proper-lockfile resolves.
  work = fs.mkdtempSync(path.join(ROOT, 'node_modules', '.cache-gpu-lock-test-'))
  buildSync({
    entryPoints: [path.join(ROOT, 'src/apply/gpu-lock.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    packages: 'external',
    outfile: path.join(work, 'gpu-lock.mjs'),
    logLevel: 'error',
  })
  runner = path.join(work, 'runner.mjs')
  fs.writeFileSync(
    runner,
    `import fs from 'node:fs'
import {withGpuLock} from './gpu-lock.mjs'
const [mode, stateDir, log, waitMs] = process.argv.slice(2)
const note = (what) => fs.appendFileSync(log, JSON.stringify({pid: process.pid, what}) + '\\n')
try {
  await withGpuLock(stateDir, '${UUID}', async () => {
    note('enter')
    if (mode === 'hold') await new Promise(() => setInterval(() => undefined, 1000))
    await new Promise((r) => setTimeout(r, 300))
    note('leave')
  }, {waitMs: Number(waitMs), trust: ${JSON.stringify(SANDBOX)}})
} catch (error) {
  note('error ' + error.code)
}
`,
  )
})

afterAll(() => fs.rmSync(work, {recursive: true, force: true}))

type Note = {pid: number; what: string}

function setup(): {stateDir: string; log: string; lock: string} {
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'gpu-cosplay-lock-'))
  fs.mkdirSync(path.join(stateDir, 'gpus'))
  return {stateDir, log: path.join(stateDir, 'log'), lock: path.join(stateDir, 'gpus', `${UUID}.lock`)}
}

function notes(log: string): Note[] {
  return fs.existsSync(log)
    ? fs
        .readFileSync(log, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Note)
    : []
}

function start(mode: 'hold' | 'wait', stateDir: string, log: string, waitMs = 60_000): {child: ChildProcess; done: Promise<void>} {
  const child = spawn(process.execPath, [runner, mode, stateDir, log, String(waitMs)], {stdio: 'ignore'})
  return {child, done: new Promise((resolve) => child.on('exit', () => resolve()))}
}

/** what one process noted, in order */
function whatOf(log: string, pid: number | undefined): string[] {
  return notes(log)
    .filter((n) => n.pid === pid)
    .map((n) => n.what)
}

async function until(check: () => boolean): Promise<void> {
  while (!check()) await new Promise((r) => setTimeout(r, 20))
}

/** A holder that has taken the lock; the lock's mtime is then pushed into the future (never stale). */
async function heldLock(stateDir: string, log: string, lock: string) {
  const holder = start('hold', stateDir, log)
  await until(() => notes(log).some((n) => n.pid === holder.child.pid && n.what === 'enter'))
  const future = new Date(Date.now() + 3_600_000)
  fs.utimesSync(lock, future, future)
  return holder
}

describe('gpu lock: takeover of a holder killed on this host', () => {
  it('two waiters take over from a SIGKILLed holder one after the other, never both at once', async () => {
    const {stateDir, log, lock} = setup()
    const holder = await heldLock(stateDir, log, lock)
    const waiters = [start('wait', stateDir, log), start('wait', stateDir, log)]
    holder.child.kill('SIGKILL')
    await holder.done
    await Promise.all(waiters.map((w) => w.done))

    const after = notes(log).filter((n) => n.pid !== holder.child.pid)
    expect(after.map((n) => n.what)).toEqual(['enter', 'leave', 'enter', 'leave'])
    expect(after[0].pid).toBe(after[1].pid)
    expect(after[2].pid).toBe(after[3].pid)
    expect(fs.existsSync(lock)).toBe(false)
  }, 60_000)

  it('never takes the lock of a live holder', async () => {
    const {stateDir, log, lock} = setup()
    const holder = await heldLock(stateDir, log, lock)
    const waiter = start('wait', stateDir, log, 1_500)
    await waiter.done
    expect(whatOf(log, waiter.child.pid)).toEqual(['error GPU_LOCKED'])
    expect(fs.existsSync(lock)).toBe(true)
    holder.child.kill('SIGKILL')
    await holder.done
  }, 60_000)

  it('leaves a dead holder of another host to the mtime rule', async () => {
    const {stateDir, log, lock} = setup()
    const holder = await heldLock(stateDir, log, lock)
    const owner = JSON.parse(fs.readFileSync(`${lock}.owner`, 'utf8'))
    fs.writeFileSync(`${lock}.owner`, JSON.stringify({...owner, hostname: `not-${os.hostname()}`}))
    holder.child.kill('SIGKILL')
    await holder.done
    const waiter = start('wait', stateDir, log, 1_500)
    await waiter.done
    expect(whatOf(log, waiter.child.pid)).toEqual(['error GPU_LOCKED'])
  }, 60_000)

  it('ignores a record of a dead pid that names another lock directory (a live holder took it since)', async () => {
    const {stateDir, log, lock} = setup()
    const dead = await heldLock(stateDir, log, lock)
    const staleRecord = fs.readFileSync(`${lock}.owner`, 'utf8')
    dead.child.kill('SIGKILL')
    await dead.done
    // The next holder took over; the earlier (dead) holder's record is put back, as if the new one had not written its own yet.
    const live = await heldLock(stateDir, log, lock)
    fs.writeFileSync(`${lock}.owner`, staleRecord)
    const waiter = start('wait', stateDir, log, 1_500)
    await waiter.done
    expect(whatOf(log, waiter.child.pid)).toEqual(['error GPU_LOCKED'])
    live.child.kill('SIGKILL')
    await live.done
  }, 60_000)
})
