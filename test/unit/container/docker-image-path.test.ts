/**
 * Issue 27: `--image` went into the Docker API's URL path as typed (`/images/<ref>/json`), so a member's `../` or `?`
 * chose another endpoint of root's engine. A reference that is not Docker's grammar never reaches the engine, and one
 * that is reaches it as it was typed.
 */
import {afterAll, beforeAll, beforeEach, describe, expect, it} from '@jest/globals'

import {DockerRuntime} from '../../../src/container/runtime.js'
import {type FakeEngine, startFakeEngine} from './fake-engine.js'

describe('DockerRuntime.inspectImage', () => {
  let engine: FakeEngine
  let runtime: DockerRuntime
  beforeAll(async () => {
    engine = await startFakeEngine()
    runtime = new DockerRuntime({dockerOptions: {socketPath: engine.socketPath}})
  })
  beforeEach(() => {
    engine.requests.length = 0
  })
  afterAll(() => engine.close())

  it.each([['../containers/json'], ['../../containers/json?all=1'], ['x?y'], ['a b'], ['x#y'], ['a%2f..%2fcontainers']])(
    '%j is refused before the engine hears of it: BAD_IMAGE, exit 2',
    async (ref) => {
      await expect(runtime.inspectImage(ref)).rejects.toMatchObject({code: 'BAD_IMAGE', exit: 2})
      expect(engine.requests).toEqual([])
    },
  )

  it.each([['ubuntu:22.04'], ['localhost:5000/team/img:v1'], [`img@sha256:${'0123456789abcdef'.repeat(4)}`]])(
    '%s reaches the engine as typed, under /images/',
    async (ref) => {
      expect(await runtime.inspectImage(ref)).toBeNull()
      expect(engine.requests).toEqual([`GET /images/${ref}/json`])
    },
  )
})
