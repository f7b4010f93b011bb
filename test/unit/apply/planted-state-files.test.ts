/**
 * A hostile teammate's plants in the state directory: a symlink at a book's path, at a name claim's path, at a lock
 * owner record's old temporary name, in place of gpus/, users/ or users/<uid>. `outside` stands for /etc/shadow (a
 * file) and `outsideDir` for /etc (a folder): neither is ever truncated, chmodded, chowned or read, and one plant does
 * not stop anybody listing the other books. Real files; the ownership cases need root (CI runs as root).
 */
import {afterEach, beforeEach, describe, expect, it} from '@jest/globals'
import {chmodSync, chownSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {listBooks, scanBooks} from '../../../src/apply/book-store.js'
import {emptyBook, readBook, writeBook} from '../../../src/apply/gpu-book.js'
import {bookPath} from '../../../src/core/state-layout.js'
import {recordOwner} from '../../../src/apply/lock-owner.js'
import {readClaims, reserveName, scanClaims} from '../../../src/apply/session-names.js'
import {ensureSharedDir, ensureUserDir, resolveStateDir} from '../../../src/apply/state-dir.js'
import {writeCalibration} from '../../../src/apply/calibration-file.js'
import {thrown} from '../support/thrown.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

const isRoot = process.getuid?.() === 0
const modeOf = (path: string) => statSync(path).mode & 0o7777
const SECRET = 'root:$6$secret:19000:0:99999:7:::\n'
const CLAIM = {gpuUuid: 'GPU-1', pid: 1, hostname: 'box'}

let base: string
let state: string
let outside: string
let outsideDir: string

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'gpu-cosplay-planted-'))
  chmodSync(base, 0o755)
  state = join(base, 'state')
  resolveStateDir({GPU_COSPLAY_STATE_DIR: state}, base, SANDBOX)
  chmodSync(state, 0o1777)
  outside = join(base, 'shadow')
  writeFileSync(outside, SECRET, {mode: 0o600})
  chmodSync(outside, 0o600)
  outsideDir = join(base, 'etc')
  mkdirSync(outsideDir, {mode: 0o755})
  chmodSync(outsideDir, 0o755)
})
afterEach(() => rmSync(base, {recursive: true, force: true}))

const outsideIsUntouched = () => {
  expect(readFileSync(outside, 'utf8')).toBe(SECRET)
  expect(modeOf(outside)).toBe(0o600)
  expect(lstatSync(outside).isFile()).toBe(true)
  expect(modeOf(outsideDir)).toBe(0o755)
  expect(statSync(outsideDir).uid).toBe(process.getuid!())
  expect(readdirSync(outsideDir)).toEqual([])
}

describe('a symlink planted at a book path', () => {
  it('is skipped and reported when listing, and the other books are still listed', () => {
    writeBook(bookPath(state, 'GPU-good'), emptyBook({uuid: 'GPU-good', name: 'NVIDIA H200'}, null))
    symlinkSync(outside, bookPath(state, 'GPU-planted'))
    expect(listBooks(state, SANDBOX).map((b) => b.book.gpu.uuid)).toEqual(['GPU-good'])
    expect(scanBooks(state, SANDBOX).refused).toEqual([expect.objectContaining({file: bookPath(state, 'GPU-planted'), reason: 'symlink'})])
    outsideIsUntouched()
  })

  it('fails only the GPU it names, with a typed error, never read', () => {
    symlinkSync(outside, bookPath(state, 'GPU-planted'))
    expect(thrown(() => readBook(bookPath(state, 'GPU-planted'), SANDBOX))).toMatchObject({code: 'UNSAFE_STATE_FILE', reason: 'symlink'})
    outsideIsUntouched()
  })

  it('is replaced, not written through, when the book is saved', () => {
    symlinkSync(outside, bookPath(state, 'GPU-planted'))
    writeBook(bookPath(state, 'GPU-planted'), emptyBook({uuid: 'GPU-planted', name: 'NVIDIA H200'}, null))
    expect(readBook(bookPath(state, 'GPU-planted'), SANDBOX)?.gpu.uuid).toBe('GPU-planted')
    outsideIsUntouched()
  })

  it('leaves a real damaged book JOURNAL_CORRUPT', () => {
    writeFileSync(bookPath(state, 'GPU-broken'), '{"version": 1, "gpu"')
    expect(thrown(() => listBooks(state, SANDBOX)).code).toBe('JOURNAL_CORRUPT')
    expect(scanBooks(state, SANDBOX, {skipCorrupt: true}).books).toEqual([])
  })
})

describe('a symlink planted at a name claim path', () => {
  it('counts as a taken name, is never opened, and reading the claims skips and reports it', () => {
    const claimFile = join(outsideDir, 'claim.json')
    writeFileSync(claimFile, JSON.stringify({version: 1, name: 'alice-3090', ...CLAIM}))
    symlinkSync(claimFile, join(state, 'sessions', 'alice-3090.json'))
    symlinkSync(outside, join(state, 'sessions', 'bob-3090.json'))
    expect(reserveName(state, 'bob-3090', CLAIM)).toBe(false)
    expect(reserveName(state, 'carol-3090', CLAIM)).toBe(true)
    expect(modeOf(join(state, 'sessions', 'carol-3090.json'))).toBe(0o644)
    expect(readClaims(state, SANDBOX).map((c) => c.name)).toEqual(['carol-3090'])
    expect(
      scanClaims(state, SANDBOX)
        .refused.map((r) => r.reason)
        .sort(),
    ).toEqual(['symlink', 'symlink'])
    rmSync(claimFile)
    outsideIsUntouched()
  })
})

describe('a symlink planted at the lock owner record’s old temporary name', () => {
  it('is never opened: the record is written beside it', () => {
    const lock = join(state, 'gpus', 'GPU-1.lock')
    mkdirSync(lock)
    symlinkSync(outside, `${lock}.owner.${process.pid}.tmp`)
    recordOwner(lock)
    outsideIsUntouched()
  })
})

describe('symlinks planted in place of folders', () => {
  it('gpus/ pointing elsewhere: the state directory is refused as damaged', () => {
    rmSync(join(state, 'gpus'), {recursive: true})
    symlinkSync(outsideDir, join(state, 'gpus'))
    expect(thrown(() => resolveStateDir({GPU_COSPLAY_STATE_DIR: state}, base, SANDBOX)).code).toBe('STATE_DIR_DAMAGED')
    outsideIsUntouched()
  })

  it('users/ pointing elsewhere: refused, never opened up to 1777', () => {
    symlinkSync(outsideDir, join(state, 'users'))
    expect(thrown(() => ensureSharedDir(join(state, 'users'), SANDBOX)).code).toBe('STATE_DIR_DAMAGED')
    outsideIsUntouched()
  })

  it('users/<uid> pointing elsewhere: refused, never chowned or chmodded to 0700', () => {
    mkdirSync(join(state, 'users'))
    chmodSync(join(state, 'users'), 0o1777)
    symlinkSync(outsideDir, join(state, 'users', '1234'))
    expect(thrown(() => ensureUserDir(state, {uid: 1234, gid: 1234}, SANDBOX)).code).toBe('STATE_DIR_DAMAGED')
    outsideIsUntouched()
  })

  it('calibrations/ pointing elsewhere: refused, nothing written there', () => {
    symlinkSync(outsideDir, join(state, 'calibrations'))
    const calibration = {
      version: 1 as const,
      gpu: {model: 'h200_sxm', name: 'NVIDIA H200', uuid: 'GPU-1'},
      driver: '550.90.12',
      measuredAt: '2026-11-23T12:00:00.000Z',
      torch: null,
      measured: {fp32Tflops: 52, bf16Tflops: 790, bandwidthGBs: 4300},
      peak: {fp32Tflops: 66.91, bf16Tflops: 989.4, bandwidthGBs: 4800},
      fractions: {fp32: 0.7772, bf16: 0.7985, bandwidth: 0.8958},
      samples: {smClockMHz: null, powerW: null, throttleReasons: []},
    }
    expect(thrown(() => writeCalibration(state, calibration, SANDBOX)).code).toBe('UNSAFE_STATE_FILE')
    outsideIsUntouched()
  })
})

describe('modes outside the engine (the team’s shared folder)', () => {
  it('books are 0666 in the world-writable gpus/, 0644 once an admin closes it', () => {
    writeBook(bookPath(state, 'GPU-1'), emptyBook({uuid: 'GPU-1', name: 'NVIDIA H200'}, null))
    expect(modeOf(join(state, 'gpus'))).toBe(0o777)
    expect(modeOf(bookPath(state, 'GPU-1'))).toBe(0o666)
    chmodSync(join(state, 'gpus'), 0o755)
    writeBook(bookPath(state, 'GPU-1'), emptyBook({uuid: 'GPU-1', name: 'NVIDIA H200'}, null))
    expect(modeOf(bookPath(state, 'GPU-1'))).toBe(0o644)
  })

  ;(isRoot ? it : it.skip)('a user folder someone else made in the 1777 users/ is given to its user (root, sudo)', () => {
    mkdirSync(join(state, 'users'))
    chmodSync(join(state, 'users'), 0o1777)
    mkdirSync(join(state, 'users', '1234'))
    chownSync(join(state, 'users', '1234'), 65534, 65534)
    ensureUserDir(state, {uid: 1234, gid: 1234}, SANDBOX)
    expect(statSync(join(state, 'users', '1234')).uid).toBe(1234)
    expect(modeOf(join(state, 'users', '1234'))).toBe(0o700)
  })
})
