/** The session's private file of --env values for `gpu-cosplay exec`, and the 'start-container' step that keeps it. */
import {lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {startContainerStep} from '../../../src/container/container-step.js'
import {readSessionEnvFile, writeSessionEnvFile} from '../../../src/container/session-env-file.js'
import {sessionEnvFileOf} from '../../../src/core/state-layout.js'

let state: string
let file: string

beforeEach(() => {
  state = mkdtempSync('/tmp/gc-env-file-')
  mkdirSync(join(state, 'users', '1234'), {recursive: true, mode: 0o711})
  file = sessionEnvFileOf(state, 1234, 'alice-t4')
})
afterEach(() => rmSync(state, {recursive: true, force: true}))

describe('the session env file', () => {
  it('is made 0600 with the values as given, newlines and quotes too', () => {
    const values = {X: 'line1\nline2 \'q\' "d" $HOME', EMPTY: ''}
    writeSessionEnvFile(file, values, null)
    expect(statSync(file).mode & 0o777).toBe(0o600)
    expect(readSessionEnvFile(file, null)).toEqual(values)
  })

  it('replaces a link planted in its place, never writing through it', () => {
    const target = join(state, 'target')
    writeFileSync(target, 'untouched\n', {mode: 0o644})
    symlinkSync(target, file)
    writeSessionEnvFile(file, {X: '1'}, null)
    expect(readFileSync(target, 'utf8')).toBe('untouched\n')
    expect(lstatSync(file).isSymbolicLink()).toBe(false)
  })

  it('is not read through a link, nor when another owner than the trusted one made it', () => {
    const elsewhere = join(state, 'elsewhere.env')
    writeFileSync(elsewhere, '{"X":"1"}\n')
    symlinkSync(elsewhere, file)
    expect(() => readSessionEnvFile(file, null)).toThrow(expect.objectContaining({code: 'UNSAFE_STATE_FILE'}))
    rmSync(file)
    writeSessionEnvFile(file, {X: '1'}, null)
    const me = process.getuid!()
    expect(readSessionEnvFile(file, me)).toEqual({X: '1'})
    expect(() => readSessionEnvFile(file, me + 1)).toThrow(expect.objectContaining({code: 'UNSAFE_STATE_FILE'}))
  })

  it('is null for a session without one', () => {
    expect(readSessionEnvFile(file, null)).toBeNull()
  })
})

describe("the 'start-container' step", () => {
  const spec = {name: 'gpu-cosplay-alice-t4', image: 'sha256:x', labels: {}, env: {}, deviceIds: null}
  const runtime = {
    createAndStart: async () => ({id: 'c1', name: spec.name, sshPort: null, sshBindAddress: null}),
    listByLabel: async () => [],
    remove: async () => 'removed' as const,
  }
  const step = startContainerStep(async () => runtime as never)
  const ctx = () => ({session: {container: null}}) as never

  it('keeps the values in the file from before the container starts until undo', async () => {
    const userEnv = {file, owner: null, values: {X: 'secret'}}
    const result = await step.apply(ctx(), {spec, access: {}, userEnv} as never, {})
    expect(readSessionEnvFile(file, null)).toEqual({X: 'secret'})
    await step.undo(ctx(), {
      kind: 'start-container',
      state: 'done',
      params: {spec, access: {}, userEnv: {...userEnv, values: {X: '(not recorded)'}}},
      prior: {},
      result,
    } as never)
    expect(() => lstatSync(file)).toThrow(expect.objectContaining({code: 'ENOENT'}))
  })

  it('removes, on undo, only a file of the shape it names', async () => {
    const other = join(state, 'precious')
    writeFileSync(other, 'keep\n')
    await step.undo(ctx(), {
      kind: 'start-container',
      state: 'done',
      params: {spec, access: {}, userEnv: {file: other, owner: null, values: {}}},
      prior: {},
      result: null,
    } as never)
    expect(readFileSync(other, 'utf8')).toBe('keep\n')
  })
})
