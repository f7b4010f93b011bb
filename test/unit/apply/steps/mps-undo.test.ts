/**
 * Issue 27: the undo of `start-mps` removes the session's MPS folder, which belongs to the member (their daemon's pipes
 * and logs). Root walking it by path can be led anywhere by a link the member swaps in mid-walk; removed with the
 * member's own rights, it reaches only what the member may remove anyway. A root-owned file inside stands for what such
 * a walk would reach: it survives, as does the target of a link the member planted, and the member's own files go.
 */
import {chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterEach, beforeEach, describe, expect, it} from '@jest/globals'

import type {JournalEntry} from '../../../../src/apply/gpu-book.js'
import {startMpsStep} from '../../../../src/apply/steps/mps-step.js'
import type {StepContext} from '../../../../src/apply/steps/step.js'
import type {Executor} from '../../../../src/core/executor.js'
import {LocalExecutor} from '../../../../src/core/local-executor.js'
import type {MpsControl} from '../../../../src/host/mps.js'

const isRoot = process.getuid?.() === 0
const asRoot = isRoot ? it : it.skip
const MEMBER = {uid: 4242, gid: 4242}

/** an MPS control whose daemon is already gone: undo's quit is a no-op */
const noDaemon = () => ({quit: async () => 'not-running'}) as unknown as MpsControl

let base: string
let sessionDir: string
let precious: string
beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'gc-mps-undo-'))
  chmodSync(base, 0o755)
  precious = join(base, 'precious')
  writeFileSync(precious, 'root’s\n', {mode: 0o644})
  // as the engine lays it out: users/<uid>/mps root's 0711, the session's folder in it the member's 0700
  const holder = join(base, 'mps')
  mkdirSync(holder, {mode: 0o711})
  sessionDir = join(holder, '0123456789')
  for (const dir of [sessionDir, join(sessionDir, 'pipe'), join(sessionDir, 'log')]) {
    mkdirSync(dir, {mode: 0o700})
    chownSync(dir, MEMBER.uid, MEMBER.gid)
  }
  writeFileSync(join(sessionDir, 'log', 'control.log'), 'x\n')
  chownSync(join(sessionDir, 'log', 'control.log'), MEMBER.uid, MEMBER.gid)
})
afterEach(() => rmSync(base, {recursive: true, force: true}))

function undoEntry(runAs: {uid: number; gid: number} | null): JournalEntry {
  const params = {pipeDirectory: join(sessionDir, 'pipe'), logDirectory: join(sessionDir, 'log'), activeThreadPercentage: 50, pinnedMemLimitMiB: 1024, runAs}
  return {kind: 'start-mps', state: 'done', params, prior: {}, result: {device: 'GPU-x'}}
}

async function undo(entry: JournalEntry, executor: Executor = new LocalExecutor()): Promise<StepContext> {
  const ctx = {notes: []} as unknown as StepContext
  await startMpsStep(noDaemon, executor).undo(ctx, entry)
  return ctx
}

describe('the undo of start-mps', () => {
  asRoot('removes a member’s folder as the member: a root-owned file inside and a planted link’s target survive', async () => {
    symlinkSync(precious, join(sessionDir, 'pipe', 'planted'))
    const rootOwned = join(sessionDir, 'log', 'not-theirs')
    mkdirSync(rootOwned, {mode: 0o755})
    writeFileSync(join(rootOwned, 'keep'), 'root’s\n', {mode: 0o644})
    const ctx = await undo(undoEntry(MEMBER))
    expect(readFileSync(precious, 'utf8')).toBe('root’s\n')
    expect(readFileSync(join(rootOwned, 'keep'), 'utf8')).toBe('root’s\n')
    // what was left is told, not thrown: the daemon is stopped, and the session can leave the book
    expect(ctx.notes).toHaveLength(1)
    expect(existsSync(join(sessionDir, 'pipe', 'planted'))).toBe(false)
    expect(existsSync(join(sessionDir, 'log', 'control.log'))).toBe(false)
  })

  asRoot('leaves nothing of a member’s folder when all of it is theirs (root removes the emptied folder itself)', async () => {
    symlinkSync(precious, join(sessionDir, 'pipe', 'planted'))
    await undo(undoEntry(MEMBER))
    expect(existsSync(sessionDir)).toBe(false)
    expect(readFileSync(precious, 'utf8')).toBe('root’s\n')
  })

  asRoot('a folder that is this process’s own is removed as before; one already gone is no error', async () => {
    chownSync(sessionDir, 0, 0)
    for (const dir of ['pipe', 'log']) chownSync(join(sessionDir, dir), 0, 0)
    chownSync(join(sessionDir, 'log', 'control.log'), 0, 0)
    const ran: string[][] = []
    const recording: Executor = {run: async (argv) => (ran.push([...argv]), {exitCode: 0, stdout: '', stderr: '', timedOut: false})}
    await undo(undoEntry(null), recording)
    expect(existsSync(sessionDir)).toBe(false)
    expect(ran).toEqual([])
    await undo(undoEntry(null), recording)
  })
})
