import {describe, expect, it} from '@jest/globals'

import {decideMpsStatus, withMpsStatus} from '../../../src/container/mps-readiness.js'
import type {Readiness} from '../../../src/container/readiness.js'
import type {DockerRuntime} from '../../../src/container/runtime.js'
import type {SessionContainer} from '../../../src/container/session-container.js'

const WANTED = {activeThreadPercentage: 52, pinnedMemLimitMiB: 2048}

describe("up's wait for the entrypoint's MPS status", () => {
  // status line (null: no file yet) x the plan needs MPS or not
  it.each([
    ['running', WANTED, {kind: 'ready'}],
    ['running\n', WANTED, {kind: 'ready'}],
    ['unavailable: no nvidia-cuda-mps-control in this container', WANTED, {kind: 'failed', why: 'no nvidia-cuda-mps-control in this container'}],
    ['failed: /usr/bin/nvidia-cuda-mps-control -d failed: boom', WANTED, {kind: 'failed', why: '/usr/bin/nvidia-cuda-mps-control -d failed: boom'}],
    // an entrypoint of before the reasons: the bare word
    ['failed', WANTED, {kind: 'failed', why: 'the entrypoint says "failed"'}],
    ['unavailable', WANTED, {kind: 'failed', why: 'the entrypoint says "unavailable"'}],
    [null, WANTED, {kind: 'waiting'}],
    ['', WANTED, {kind: 'waiting'}],
    ['running', null, {kind: 'ready'}],
    ['unavailable: no nvidia-cuda-mps-control in this container', null, {kind: 'ready'}],
    ['failed: x', null, {kind: 'ready'}],
    [null, null, {kind: 'ready'}],
  ] as const)('%j with %j: %j', (line, wanted, decision) => expect(decideMpsStatus(line, wanted)).toEqual(decision))

  const container = {id: 'c1', name: 'gpu-cosplay-s', session: 's', user: 'u', unprivileged: false} as unknown as SessionContainer
  const ready: Readiness = {describe: 'ssh', waitUntilReady: async () => ({hostKey: 'ssh-ed25519 AAAA'})}
  const runtimeReading = (...lines: (string | null)[]) => {
    const reads: string[][] = []
    const runtime = {
      async exec(_id: string, argv: string[]) {
        reads.push(argv)
        const line = lines.length > 1 ? lines.shift()! : lines[0]
        return line === null ? {exitCode: 1, stdout: '', stderr: 'No such file'} : {exitCode: 0, stdout: line, stderr: ''}
      },
    } as unknown as DockerRuntime
    return {runtime, reads}
  }

  it('fails with MPS_NOT_RUNNING, naming the reason and --no-mps, when the plan needs MPS and the daemon is not running', async () => {
    const {runtime, reads} = runtimeReading(null, 'unavailable: no nvidia-cuda-mps-control in this container')
    const error = await withMpsStatus(ready, container, runtime, WANTED)
      .waitUntilReady(5_000)
      .catch((e: unknown) => e)
    expect(error).toMatchObject({code: 'MPS_NOT_RUNNING', exit: 3, message: expect.stringContaining('no nvidia-cuda-mps-control in this container')})
    expect((error as {fix: string[]}).fix.join('\n')).toMatch(/--no-mps/)
    expect(reads).toEqual([
      ['cat', '/run/gpu-cosplay/mps/status'],
      ['cat', '/run/gpu-cosplay/mps/status'],
    ])
  })

  it('returns what the container readiness learnt once the daemon runs; without MPS in the plan it reads nothing', async () => {
    const running = runtimeReading('running\n')
    await expect(withMpsStatus(ready, container, running.runtime, WANTED).waitUntilReady(5_000)).resolves.toEqual({hostKey: 'ssh-ed25519 AAAA'})
    const none = runtimeReading(null)
    await expect(withMpsStatus(ready, container, none.runtime, null).waitUntilReady(5_000)).resolves.toEqual({hostKey: 'ssh-ed25519 AAAA'})
    expect(none.reads).toEqual([])
  })

  it('gives up within the timeout when the entrypoint writes no status', async () => {
    const {runtime} = runtimeReading(null)
    await expect(withMpsStatus(ready, container, runtime, WANTED).waitUntilReady(300)).rejects.toMatchObject({code: 'MPS_NOT_RUNNING'})
  })
})
