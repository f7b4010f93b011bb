/**
 * The writer and readers every state file goes through, against files a hostile teammate plants in a folder they may
 * write to: a symlink at the temporary name, at the file, in place of the folder; a FIFO; a file of someone else's.
 * `outside` stands for /etc/shadow: it must never be truncated, chmodded, replaced or read.
 */
import {afterEach, beforeEach, describe, expect, it} from '@jest/globals'
import {chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {execFileSync} from 'node:child_process'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {readJsonFile, readTextIfExists, UnsafeFileError, writeJsonAtomic, writeTextAtomic} from '../../../src/core/json-file.js'
import {thrown} from '../support/thrown.js'

const isRoot = process.getuid?.() === 0
const modeOf = (path: string) => statSync(path).mode & 0o7777
const SECRET = 'root:$6$secret:19000:0:99999:7:::\n'
const anything = {safeParse: (raw: unknown) => ({success: true as const, data: raw})}

let base: string
let shared: string
let outside: string

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'gpu-cosplay-json-file-'))
  chmodSync(base, 0o755)
  shared = join(base, 'gpus')
  mkdirSync(shared)
  chmodSync(shared, 0o777) // the team's un-installed shared folder: anyone may plant here
  outside = join(base, 'shadow')
  writeFileSync(outside, SECRET, {mode: 0o600})
  chmodSync(outside, 0o600)
})
afterEach(() => rmSync(base, {recursive: true, force: true}))

const outsideIsUntouched = () => {
  expect(readFileSync(outside, 'utf8')).toBe(SECRET)
  expect(modeOf(outside)).toBe(0o600)
  expect(statSync(outside).isFile()).toBe(true)
}

describe('writeTextAtomic / writeJsonAtomic', () => {
  it('never opens a symlink planted at the old predictable temporary name (.<file>.<pid>.tmp)', () => {
    const file = join(shared, 'GPU-1.json')
    symlinkSync(outside, join(shared, `.GPU-1.json.${process.pid}.tmp`))
    writeJsonAtomic(file, {version: 1})
    outsideIsUntouched()
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({version: 1})
  })

  it('replaces a symlink planted at the file itself, never writing through it', () => {
    const file = join(shared, 'GPU-1.json')
    symlinkSync(outside, file)
    writeJsonAtomic(file, {version: 1})
    outsideIsUntouched()
    expect(statSync(file).isFile()).toBe(true)
  })

  it('refuses a folder that is a symlink (a planted gpus/ pointing at /etc)', () => {
    const elsewhere = join(base, 'etc')
    mkdirSync(elsewhere)
    const linked = join(base, 'linked')
    symlinkSync(elsewhere, linked)
    const error = thrown(() => writeJsonAtomic(join(linked, 'passwd'), {version: 1}))
    expect(error).toBeInstanceOf(UnsafeFileError)
    expect((error as UnsafeFileError).reason).toBe('symlink')
    expect(readdirSync(elsewhere)).toEqual([])
  })

  it('follows a symlinked folder only when asked (a user’s own ~/.ssh)', () => {
    const real = join(base, 'real-ssh')
    mkdirSync(real)
    symlinkSync(real, join(base, 'ssh'))
    writeTextAtomic(join(base, 'ssh', 'config'), 'Host x\n', 0o600, {folderMayBeLink: true})
    expect(readFileSync(join(real, 'config'), 'utf8')).toBe('Host x\n')
  })

  it('uses an unpredictable temporary name and leaves none behind, even when the rename fails', () => {
    const file = join(shared, 'GPU-1.json')
    mkdirSync(file) // a folder in the file's place: rename fails
    writeFileSync(join(file, 'keep'), '')
    expect(() => writeJsonAtomic(file, {version: 1})).toThrow()
    expect(readdirSync(shared)).toEqual(['GPU-1.json'])
  })

  it('writes 0666 only in a world-writable folder, 0644 in one that is not, exactly the mode asked for a secret', () => {
    const previous = process.umask(0o077)
    try {
      writeJsonAtomic(join(shared, 'a.json'), {})
      expect(modeOf(join(shared, 'a.json'))).toBe(0o666)
      const rootOnly = join(base, 'engine')
      mkdirSync(rootOnly)
      chmodSync(rootOnly, 0o755)
      writeJsonAtomic(join(rootOnly, 'a.json'), {})
      expect(modeOf(join(rootOnly, 'a.json'))).toBe(0o644)
      writeTextAtomic(join(rootOnly, 'key'), 'secret', 0o600)
      expect(modeOf(join(rootOnly, 'key'))).toBe(0o600)
      writeTextAtomic(join(shared, 'key'), 'secret', 0o600)
      expect(modeOf(join(shared, 'key'))).toBe(0o600)
    } finally {
      process.umask(previous)
    }
  })

  ;(isRoot ? it : it.skip)('gives the file to an owner on its descriptor before it takes the name', () => {
    writeTextAtomic(join(shared, 'key'), 'secret', 0o600, {owner: {uid: 65534, gid: 65534}})
    expect(statSync(join(shared, 'key')).uid).toBe(65534)
  })
})

describe('readTextIfExists / readJsonFile', () => {
  it('refuses a symlink with a typed reason instead of reading where it points', () => {
    const file = join(shared, 'GPU-1.json')
    symlinkSync(outside, file)
    const error = thrown(() => readTextIfExists(file))
    expect(error).toBeInstanceOf(UnsafeFileError)
    expect(error).toMatchObject({code: 'UNSAFE_STATE_FILE', reason: 'symlink', file})
    expect(thrown(() => readJsonFile(file, anything))).toBeInstanceOf(UnsafeFileError)
    outsideIsUntouched()
  })

  it('follows a symlink only when asked (a user’s own config)', () => {
    const file = join(base, 'config')
    symlinkSync(outside, file)
    expect(readTextIfExists(file, {followSymlinks: true})).toBe(SECRET)
  })

  it('refuses a FIFO without hanging, and a folder', () => {
    const fifo = join(shared, 'GPU-2.json')
    execFileSync('mkfifo', [fifo])
    expect(thrown(() => readTextIfExists(fifo))).toMatchObject({reason: 'not-a-file'})
    mkdirSync(join(shared, 'GPU-3.json'))
    expect(thrown(() => readTextIfExists(join(shared, 'GPU-3.json')))).toMatchObject({reason: 'not-a-file'})
  })

  it('is null for a missing file and reads a regular one', () => {
    expect(readTextIfExists(join(shared, 'none.json'))).toBeNull()
    writeFileSync(join(shared, 'a.json'), '{"version":1}')
    expect(readJsonFile(join(shared, 'a.json'), anything)).toEqual({ok: true, data: {version: 1}})
    expect(existsSync(join(shared, 'a.json'))).toBe(true)
  })

  ;(isRoot ? it : it.skip)('refuses a file of an owner not trusted', () => {
    const file = join(shared, 'GPU-4.json')
    writeFileSync(file, '{"version":1}')
    chownSync(file, 65534, 65534)
    expect(thrown(() => readTextIfExists(file, {owner: 0}))).toMatchObject({reason: 'foreign-owner'})
    expect(readTextIfExists(file, {owner: 65534})).toBe('{"version":1}')
    expect(readTextIfExists(file, {owner: null})).toBe('{"version":1}')
  })
})
