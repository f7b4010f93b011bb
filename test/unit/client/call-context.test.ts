/**
 * Who is asking travels as a value (core/call-context.ts), made once at each entry point: the same use case, run in
 * one process, answers a member's own sandbox and the engine acting for that member differently, and each correctly.
 * Nothing here sets a module's state or mocks one: a context that leaked from one call into the next would show.
 */
import {afterEach, beforeEach, describe, expect, it} from '@jest/globals'
import {chownSync, mkdirSync, mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {emptyBook, type GpuBook, newSessionBase, writeBook} from '../../../src/apply/gpu-book.js'
import {readHostStatus} from '../../../src/client/read-host-status.js'
import type {BoxConfig} from '../../../src/core/box-config.js'
import {type CallContext, callContext, callContextOf, requireRootOnSharedBox} from '../../../src/core/call-context.js'
import {bookPath, booksDir} from '../../../src/core/state-layout.js'
import {ENGINE_STATE_POLICY, SHARED_STATE_POLICY} from '../../../src/core/state-policy.js'
import {thrown} from '../support/thrown.js'

const MEMBER = {uid: 1001, gid: 1001, user: 'alice', isRoot: false}
const BOX: BoxConfig = {
  version: 1,
  group: 'gpu',
  stateDir: '/var/lib/gpu-cosplay',
  nvidiaSmi: '/usr/bin/nvidia-smi',
  mpsControl: null,
  engine: '/usr/local/libexec/gpu-cosplay/engine',
  allowContainerSudo: false,
}
/** alice at her own sandbox: she is the caller, and the state directory is hers (any teammate's files are read) */
const sandbox: CallContext = callContext({caller: MEMBER, box: null, actsForCaller: false})
/** the engine, root, serving alice's request through the sudoers rule: only root's files are trusted */
const engineForMember: CallContext = callContext({caller: MEMBER, box: BOX, actsForCaller: true})

describe('the call context', () => {
  it('is the engine only as root, with the engine mark and the box configuration; the caller is sudo’s word', () => {
    const env = {GPU_COSPLAY_ENGINE: 'caller', SUDO_UID: '1001', SUDO_GID: '1001', SUDO_USER: 'alice'}
    const engine = callContextOf(env, BOX, 0)
    expect(engine).toMatchObject({caller: MEMBER, box: BOX, actsForCaller: true, memberClient: false, policy: ENGINE_STATE_POLICY})
    // the same environment in a member's own process (the mark is not theirs to set): not the engine, and no SUDO_* taken
    const member = callContextOf(env, BOX, 1001)
    expect(member).toMatchObject({box: null, actsForCaller: false, policy: SHARED_STATE_POLICY, caller: {uid: 1001, isRoot: false}})
    // root without a configuration (nothing installed): not the engine; an admin's own sudo is root
    expect(callContextOf(env, null, 0)).toMatchObject({box: null, actsForCaller: false, policy: SHARED_STATE_POLICY, caller: {uid: 1001, isRoot: true}})
    // root at a shell of an installed box: the engine for itself
    expect(callContextOf({GPU_COSPLAY_ENGINE: 'root'}, BOX, 0)).toMatchObject({box: BOX, actsForCaller: false, policy: ENGINE_STATE_POLICY})
    expect(callContextOf({GPU_COSPLAY_ENGINE: 'member'}, BOX, 1001)).toMatchObject({box: null, memberClient: true})
  })

  it('lets a box-wide command through for alice’s sandbox and refuses it to the engine acting for her', () => {
    expect(() => requireRootOnSharedBox(sandbox, 'up --lock-clock', 'locks the clock')).not.toThrow()
    expect(thrown(() => requireRootOnSharedBox(engineForMember, 'up --lock-clock', 'locks the clock'))).toMatchObject({code: 'ROOT_ONLY', exit: 4})
    const rootThroughEngine = callContext({caller: {uid: 0, gid: 0, user: 'root', isRoot: true}, box: BOX, actsForCaller: true})
    expect(() => requireRootOnSharedBox(rootThroughEngine, 'up --lock-clock', 'locks the clock')).not.toThrow()
  })
})

describe('one use case (status) under two contexts in one process', () => {
  let base: string
  const saved = {state: process.env.GPU_COSPLAY_STATE_DIR, smi: process.env.GPU_COSPLAY_NVIDIA_SMI}

  beforeEach(() => {
    base = mkdtempSync(join(tmpdir(), 'gpu-cosplay-call-context-'))
    const state = join(base, 'state')
    mkdirSync(booksDir(state), {recursive: true})
    process.env.GPU_COSPLAY_STATE_DIR = state
    process.env.GPU_COSPLAY_NVIDIA_SMI = join(base, 'no-nvidia-smi') // no GPU read: the books are the answer
    // a book a member wrote (root's tests give it to alice; anyone else's own file is already not root's)
    const book: GpuBook = emptyBook({uuid: 'GPU-1', name: 'NVIDIA H200'}, null)
    book.sessions['lease:job-1'] = {
      kind: 'lease',
      ...newSessionBase('lease:job-1', {owner: {uid: MEMBER.uid, user: MEMBER.user}, pid: 1, hostname: 'box'}),
      phase: 'active',
      holder: 'job-1',
      hold: {clockMHz: null, powerLimitW: null},
    }
    writeBook(bookPath(state, 'GPU-1'), book)
    if (process.getuid?.() === 0) chownSync(bookPath(state, 'GPU-1'), MEMBER.uid, MEMBER.gid)
  })
  afterEach(() => {
    rmSync(base, {recursive: true, force: true})
    for (const [name, value] of [
      ['GPU_COSPLAY_STATE_DIR', saved.state],
      ['GPU_COSPLAY_NVIDIA_SMI', saved.smi],
    ] as const) {
      if (value === undefined) delete process.env[name]
      else process.env[name] = value
    }
  })

  it('shows the member’s book to her sandbox, and the engine refuses to trust it', async () => {
    const mine = await readHostStatus(sandbox, {orphans: false})
    const engine = await readHostStatus(engineForMember, {orphans: false})
    const again = await readHostStatus(sandbox, {orphans: false})

    expect(mine.sessions.map((s) => [s.name, s.owner])).toEqual([['lease:job-1', 'alice']])
    expect(mine.refusedFiles).toEqual([])

    expect(engine.sessions).toEqual([])
    expect(engine.refusedFiles).toEqual([expect.objectContaining({file: bookPath(process.env.GPU_COSPLAY_STATE_DIR!, 'GPU-1'), reason: 'foreign-owner'})])

    // the engine's answer changed nothing for the next caller in this process
    expect(again.sessions.map((s) => s.name)).toEqual(['lease:job-1'])
  })
})
