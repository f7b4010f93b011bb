/**
 * Issue 27: what root collects from a docker exec in a member's container (the reaper's notice and login checks,
 * verify) is bounded: a command that prints without end cannot fill root's memory. What is past the bound is read
 * and dropped, so the command still ends.
 */
import {afterAll, beforeAll, describe, expect, it} from '@jest/globals'

import {DockerRuntime, EXEC_KEEP_BYTES} from '../../../src/container/runtime.js'
import {type FakeEngine, startFakeEngine} from './fake-engine.js'

describe('DockerRuntime.exec with collected output', () => {
  let engine: FakeEngine
  const printedBytes = 4 * 1024 * 1024
  beforeAll(async () => {
    engine = await startFakeEngine({execStdoutBytes: printedBytes})
  })
  afterAll(() => engine.close())

  it('keeps at most EXEC_KEEP_BYTES of a command that prints megabytes, and still returns its exit code', async () => {
    const runtime = new DockerRuntime({dockerOptions: {socketPath: engine.socketPath}})
    const done = await runtime.exec('0123456789ab', ['sh', '-c', 'yes'], {user: '1001:1001', timeoutMs: 30_000})
    expect(done.exitCode).toBe(0)
    expect(EXEC_KEEP_BYTES).toBe(64 * 1024)
    expect(done.stdout.length).toBe(EXEC_KEEP_BYTES)
    expect(done.stdout).toBe('x'.repeat(EXEC_KEEP_BYTES))
  })
})
