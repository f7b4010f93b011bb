/**
 * Issue 20 with real containers (run by test/e2e/run.sh as root; every CLI call runs as the non-root `cosplayer`): a
 * session's TTL, staged in its book, brings the reaper's warning to its ssh login and to the notice file; at its end
 * `system reap` ends it as `down` does: its container is gone and the GPU is as found.
 */
import {readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {jest} from '@jest/globals'

import {containersOf, World} from './support.js'

jest.setTimeout(180_000)

let world: World
beforeEach(() => {
  world = new World()
})
afterEach(() => world.cleanup())

/** The session's end (and start), written into its book as up --ttl would have. */
function stageEnd(world: World, name: string, startedMsAgo: number, endsInMs: number): void {
  const dir = join(world.stateDir, 'gpus')
  const file = join(
    dir,
    readdirSync(dir).find((f) => f.endsWith('.json') && !f.startsWith('.'))!,
  )
  const book = JSON.parse(readFileSync(file, 'utf8'))
  book.sessions[name].createdAt = new Date(Date.now() - startedMsAgo).toISOString()
  book.sessions[name].expiresAt = new Date(Date.now() + endsInMs).toISOString()
  writeFileSync(file, JSON.stringify(book)) // in place: the file keeps its owner
}

it('the warning reaches an ssh login and the notice file; at the end the container is gone and the GPU as found', () => {
  const before = world.gpuState()
  expect(world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace]).exitCode).toBe(0)
  // 25 s of life, 5 s left: within the warning lead (a fifth of it)
  stageEnd(world, world.id, 20_000, 5_000)
  const warned = world.json(['system', 'reap'])
  expect(warned.exitCode).toBe(0)
  expect(warned.json.actions).toMatchObject([{name: world.id, action: 'warned', reason: 'ttl'}])
  expect(world.cli(['ssh', world.id, '--', 'cat', '/tmp/gpu-cosplay/notice']).stdout).toContain(`session ${world.id} ends in`)
  // an interactive login shell shows it
  expect(world.cli(['ssh', world.id, '--', 'bash', '-lic', 'true']).stdout).toContain(`session ${world.id} ends in`)

  stageEnd(world, world.id, 30_000, -1_000)
  const ended = world.json(['system', 'reap'])
  expect(ended.exitCode).toBe(0)
  expect(ended.json.actions).toMatchObject([{name: world.id, action: 'ended', reason: 'ttl'}])
  expect(containersOf(world.id)).toEqual([])
  expect(world.gpuState()).toEqual(before)
  expect(world.json(['ps']).json).toEqual([])
})

it('a user who plants a FIFO where the notice is written does not stall the reaper: it goes on and still ends the session', () => {
  const before = world.gpuState()
  expect(world.json(['up', '3090', '--name', world.id, '--workspace', world.workspace]).exitCode).toBe(0)
  expect(world.cli(['ssh', world.id, '--', 'mkdir -p /tmp/gpu-cosplay && mkfifo /tmp/gpu-cosplay/notice.tmp']).exitCode).toBe(0)
  stageEnd(world, world.id, 20_000, 5_000)
  const started = Date.now()
  const warned = world.json(['system', 'reap'])
  expect(warned.exitCode).toBe(0)
  expect(Date.now() - started).toBeLessThan(40_000)
  expect(warned.json.notes).toEqual([expect.stringMatching(/the warning did not reach it \(.*did not end within/)])

  stageEnd(world, world.id, 30_000, -1_000)
  expect(world.json(['system', 'reap']).json.actions).toMatchObject([{name: world.id, action: 'ended', reason: 'ttl'}])
  expect(containersOf(world.id)).toEqual([])
  expect(world.gpuState()).toEqual(before)
})
