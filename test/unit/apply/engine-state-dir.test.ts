/**
 * The engine's state directory (an installed box: root runs every change through one sudoers rule): root's alone.
 * The engine's trust is passed in (ENGINE_STATE_POLICY, as the engine's call context carries it); everything else is
 * real files, as root
 * (CI runs as root; without root these cases are skipped).
 */
import {afterEach, beforeEach, describe, expect, it} from '@jest/globals'
import {chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

const {ensureHolderDir, ensurePrivateDir, ensureUserDir, resolveStateDir} = await import('../../../src/apply/state-dir.js')
const {ENGINE_STATE_POLICY: ENGINE, statePolicyOf} = await import('../../../src/core/state-policy.js')
const {emptyBook, readBook, writeBook} = await import('../../../src/apply/gpu-book.js')
const {bookPath} = await import('../../../src/core/state-layout.js')
const {scanBooks} = await import('../../../src/apply/book-store.js')
const {reserveName, scanClaims} = await import('../../../src/apply/session-names.js')
const {thrown} = await import('../support/thrown.js')

const isRoot = process.getuid?.() === 0
const describeAsRoot = isRoot ? describe : describe.skip
const modeOf = (path: string) => lstatSync(path).mode & 0o7777
const ownerOf = (path: string) => lstatSync(path).uid
const USER = {uid: 1234, gid: 1234}
const NOBODY = 65534

let base: string
let state: string
const savedStateDir = process.env.GPU_COSPLAY_STATE_DIR

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'gpu-cosplay-engine-'))
  chmodSync(base, 0o755)
  state = join(base, 'state')
  process.env.GPU_COSPLAY_STATE_DIR = state // as pinEngineEnvironment sets it
})
afterEach(() => {
  rmSync(base, {recursive: true, force: true})
  if (savedStateDir === undefined) delete process.env.GPU_COSPLAY_STATE_DIR
  else process.env.GPU_COSPLAY_STATE_DIR = savedStateDir
})

const engineDir = () => resolveStateDir(process.env, base, ENGINE)

describeAsRoot('the engine’s state directory', () => {
  it('is made root 0755 with gpus/, sessions/ and users/ the same', () => {
    expect(statePolicyOf(true)).toEqual({engine: true, sharedFolderMode: 0o755, trustedOwner: 0})
    const previous = process.umask(0o000)
    try {
      expect(engineDir().dir).toBe(state)
    } finally {
      process.umask(previous)
    }
    for (const dir of [state, join(state, 'gpus'), join(state, 'sessions'), join(state, 'users')]) {
      expect([ownerOf(dir), modeOf(dir)]).toEqual([0, 0o755])
    }
  })

  it('takes over a shared folder an un-installed team left (1777, a user’s)', () => {
    mkdirSync(join(state, 'gpus'), {recursive: true})
    chmodSync(state, 0o1777)
    chownSync(state, NOBODY, NOBODY)
    chmodSync(join(state, 'gpus'), 0o777)
    chownSync(join(state, 'gpus'), NOBODY, NOBODY)
    engineDir()
    expect([ownerOf(state), modeOf(state)]).toEqual([0, 0o755])
    expect([ownerOf(join(state, 'gpus')), modeOf(join(state, 'gpus'))]).toEqual([0, 0o755])
  })

  it('refuses a state directory or sub-folder that is a symlink, leaving where it points alone', () => {
    const elsewhere = join(base, 'etc')
    mkdirSync(elsewhere)
    chmodSync(elsewhere, 0o777)
    chownSync(elsewhere, NOBODY, NOBODY)
    symlinkSync(elsewhere, state)
    expect(thrown(engineDir).code).toBe('STATE_DIR_DAMAGED')
    rmSync(state)
    mkdirSync(state)
    symlinkSync(elsewhere, join(state, 'sessions'))
    expect(thrown(engineDir).code).toBe('STATE_DIR_DAMAGED')
    expect([ownerOf(elsewhere), modeOf(elsewhere)]).toEqual([NOBODY, 0o777])
  })

  it('writes books 0644 and claims 0644, root’s', () => {
    engineDir()
    writeBook(bookPath(state, 'GPU-1'), emptyBook({uuid: 'GPU-1', name: 'NVIDIA H200'}, null))
    expect([ownerOf(bookPath(state, 'GPU-1')), modeOf(bookPath(state, 'GPU-1'))]).toEqual([0, 0o644])
    expect(reserveName(state, 'alice-3090', {gpuUuid: 'GPU-1', pid: 1, hostname: 'box'})).toBe(true)
    expect(modeOf(join(state, 'sessions', 'alice-3090.json'))).toBe(0o644)
  })

  it('never trusts a book or claim that root did not write: skipped and reported, the others listed', () => {
    engineDir()
    writeBook(bookPath(state, 'GPU-1'), emptyBook({uuid: 'GPU-1', name: 'NVIDIA H200'}, null))
    writeBook(bookPath(state, 'GPU-2'), emptyBook({uuid: 'GPU-2', name: 'NVIDIA H200'}, null))
    chownSync(bookPath(state, 'GPU-2'), NOBODY, NOBODY)
    writeFileSync(join(state, 'sessions', 'bob.json'), JSON.stringify({version: 1, name: 'bob', gpuUuid: 'GPU-1', pid: 1, hostname: 'box'}))
    chownSync(join(state, 'sessions', 'bob.json'), NOBODY, NOBODY)
    const scan = scanBooks(state, ENGINE)
    expect(scan.books.map((b) => b.book.gpu.uuid)).toEqual(['GPU-1'])
    expect(scan.refused).toEqual([expect.objectContaining({file: bookPath(state, 'GPU-2'), reason: 'foreign-owner'})])
    expect(thrown(() => readBook(bookPath(state, 'GPU-2'), ENGINE)).code).toBe('UNSAFE_STATE_FILE')
    expect(scanClaims(state, ENGINE)).toEqual({claims: [], refused: [expect.objectContaining({reason: 'foreign-owner'})]})
  })

  it('keeps users/<uid> root 0711 (also when asked for a private folder) and gives a session folder inside to the user 0700', () => {
    engineDir()
    const mine = ensureUserDir(state, USER, ENGINE)
    expect([ownerOf(mine), modeOf(mine)]).toEqual([0, 0o711])
    ensurePrivateDir(mine, USER, ENGINE) // what the ssh key code asks for the user's folder
    expect([ownerOf(mine), modeOf(mine)]).toEqual([0, 0o711])
    const mps = join(mine, 'mps')
    ensureHolderDir(mps, USER, ENGINE)
    expect([ownerOf(mps), modeOf(mps)]).toEqual([0, 0o711])
    const session = join(mps, 'abc123')
    ensurePrivateDir(session, USER, ENGINE)
    expect([ownerOf(session), modeOf(session)]).toEqual([USER.uid, 0o700])
  })

  it('refuses a symlink the user planted inside their session folder instead of chowning where it points', () => {
    engineDir()
    const session = join(ensureUserDir(state, USER, ENGINE), 'abc123')
    ensurePrivateDir(session, USER, ENGINE)
    const shadow = join(base, 'shadow')
    writeFileSync(shadow, 'secret', {mode: 0o600})
    chmodSync(shadow, 0o600)
    symlinkSync(shadow, join(session, 'pipe'))
    expect(thrown(() => ensurePrivateDir(join(session, 'pipe'), USER, ENGINE)).code).toBe('STATE_DIR_DAMAGED')
    expect([ownerOf(shadow), modeOf(shadow), readFileSync(shadow, 'utf8')]).toEqual([0, 0o600, 'secret'])
    expect(statSync(shadow).isFile()).toBe(true)
  })
})
