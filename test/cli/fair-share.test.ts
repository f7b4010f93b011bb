/**
 * Issue 20 through the commands it adds: `system reap` ends a session whose TTL ran out as `down` does (and a reaper
 * killed mid-way is finished by `recover`); `extend` moves the end. The TTL is staged in the book (up's --ttl is wired
 * by the command layer).
 */
import {afterAll, expect, it, jest} from '@jest/globals'

import {freshScene, killDuring} from './support/crash-points.js'
import {cleanupTemps, editBook, type Env, runCli, runJson} from './support/run-cli.js'
import {gpuState} from './support/run-cli-async.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

function upWithEnd(env: Env, name: string, inMs: number): void {
  const up = runCli(['up', '3090', '--no-container', '--name', name], env)
  if (up.exitCode !== 0) throw new Error(`up failed: ${up.stderr}`)
  editBook(env, (book) => {
    book.sessions[name].expiresAt = new Date(Date.now() + inMs).toISOString()
  })
}

it('system reap ends a session past its TTL, with the GPU as found, and leaves others', () => {
  const {sim, env, before} = freshScene()
  upWithEnd(env, 'bystander', 3_600_000)
  const kept = gpuState(sim)
  upWithEnd(env, 'due', -1_000)
  const reaped = runJson(['system', 'reap'], env)
  expect(reaped.exitCode).toBe(0)
  expect(reaped.json.actions).toMatchObject([{name: 'due', action: 'ended', reason: 'ttl'}])
  expect(reaped.json.closed).toMatchObject([{name: 'due'}])
  expect(runJson(['ps'], env).json.map((s: {name: string}) => s.name)).toEqual(['bystander'])
  expect(gpuState(sim)).toEqual(kept)
  expect(runJson(['down', 'bystander'], env).exitCode).toBe(0)
  expect(gpuState(sim)).toEqual(before)
})

it('system reap leaves a session that is not due, and says so', () => {
  const {env} = freshScene()
  upWithEnd(env, 'later', 3_600_000)
  const reaped = runCli(['system', 'reap'], env)
  expect(reaped.exitCode).toBe(0)
  expect(reaped.stdout).toContain('Nothing to reap.')
  expect(runJson(['ps'], env).json.map((s: {name: string}) => s.name)).toEqual(['later'])
})

it('extend moves the end; a bad duration is refused (exit 2)', () => {
  const {env} = freshScene()
  upWithEnd(env, 'mine', 60_000)
  const moved = runJson(['extend', 'mine', '--by', '30m'], env)
  expect(moved.exitCode).toBe(0)
  expect(moved.json.timeLeftMs).toBeGreaterThan(30 * 60_000)
  expect(runJson(['extend', 'mine', '--by', 'soon'], env)).toMatchObject({exitCode: 2, json: {error: {code: 'BAD_DURATION'}}})
  expect(runJson(['extend', 'nobody', '--by', '1m'], env)).toMatchObject({exitCode: 2, json: {error: {code: 'UNKNOWN_SESSION'}}})
})

it('a reaper killed while it ends a session is finished by recover', async () => {
  const {sim, env, before} = freshScene()
  upWithEnd(env, 'victim', -1_000)
  await killDuring(sim, env, ['system', 'reap'], ['-dgi'], 'hang')
  const recovered = runJson(['recover'], env)
  expect(recovered.exitCode).toBe(0)
  expect(recovered.json.gpus[0].recovered).toEqual(['victim'])
  expect(gpuState(sim)).toEqual(before)
  expect(runJson(['ps'], env).json).toEqual([])
})
