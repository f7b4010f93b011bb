/**
 * Issue 20 through `up`: --ttl ends a session by itself (in a sandbox, the next command that opens the state reaps
 * it), and --wait queues for a slice instead of failing, leaving the queue on timeout with nothing changed.
 */
import {userInfo} from 'node:os'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {freshScene} from './support/crash-points.js'
import {cleanupTemps, type Env, runCli, runJson} from './support/run-cli.js'
import {gpuState, startCli} from './support/run-cli-async.js'

jest.setTimeout(90_000)
afterAll(cleanupTemps)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** seven 1g slices: an H200 with no slice left */
function fillGpu(env: Env): string[] {
  const names = [...Array(7).keys()].map((i) => `t${i}`)
  for (const name of names) expect(runCli(['up', 't4', '--match', 'fp32', '--no-container', '--name', name], env).exitCode).toBe(0)
  return names
}

describe('up --ttl', () => {
  it('records the end and ps shows the time left', () => {
    const {env} = freshScene()
    expect(runJson(['up', '3090', '--no-container', '--name', 'long', '--ttl', '1h'], env).exitCode).toBe(0)
    const listed = runJson(['ps'], env).json[0]
    expect(listed.timeLeftMs).toBeGreaterThan(3_500_000)
    expect(listed.timeLeftMs).toBeLessThanOrEqual(3_600_000)
    expect(runCli(['ps'], env).stdout).toMatch(/LEFT\n[\s\S]*long .* 59m/)
  })

  it('is ended at its TTL by the next command that opens the state, with the GPU as found', async () => {
    const {sim, env, before} = freshScene()
    expect(runJson(['up', '3090', '--no-container', '--name', 'short', '--ttl', '3s'], env).exitCode).toBe(0)
    await sleep(3500)
    expect(runJson(['ps'], env).json).toEqual([])
    expect(gpuState(sim)).toEqual(before)
  })

  it('a duration it cannot read fails before anything changes', () => {
    const {sim, env, before} = freshScene()
    const up = runJson(['up', '3090', '--no-container', '--ttl', '5 parsecs'], env)
    expect(up.exitCode).toBe(2)
    expect(up.json.error.message).toMatch(/--ttl/)
    expect(gpuState(sim)).toEqual(before)
    expect(runJson(['ps'], env).json).toEqual([])
  })
})

describe('up --wait', () => {
  it('on a full GPU waits, is listed by ps --queue, and comes up as soon as a slice frees', async () => {
    const {env} = freshScene()
    const [first] = fillGpu(env)
    const waiter = startCli(['up', 't4', '--match', 'fp32', '--no-container', '--name', 'queued', '--wait', '--json'], env)
    let queued: {user: string; position: number; name?: string}[] = []
    for (let i = 0; i < 100 && queued.length === 0; i++) {
      await sleep(100)
      queued = runJson(['ps', '--queue'], env).json
    }
    // what waits, named (issue 27): the session name asked for, its owner, its target
    expect(queued).toMatchObject([{position: 1, name: 'queued', user: userInfo().username, target: 't4', stalled: false}])
    expect(runCli(['down', first], env).exitCode).toBe(0)
    const done = await waiter.done
    expect({exit: done.exitCode, stderr: done.stderr}).toEqual({exit: 0, stderr: expect.any(String)})
    expect(JSON.parse(done.stdout).name).toBe('queued')
    expect(runJson(['ps', '--queue'], env).json).toEqual([])
  })

  it('--timeout leaves the queue with nothing changed', () => {
    const {sim, env} = freshScene()
    fillGpu(env)
    const full = gpuState(sim)
    const up = runJson(['up', 't4', '--match', 'fp32', '--no-container', '--name', 'late', '--wait', '--timeout', '2s'], env)
    expect(up.exitCode).toBe(3)
    expect(up.json.error.code).toBe('QUEUE_TIMEOUT')
    expect(gpuState(sim)).toEqual(full)
    expect(runJson(['ps', '--queue'], env).json).toEqual([])
    expect(runJson(['ps'], env).json).toHaveLength(7)
  })
})
