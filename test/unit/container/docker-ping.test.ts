import {mkdtempSync, rmSync} from 'node:fs'
import {createServer, type Server, type Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {DockerRuntime} from '../../../src/container/runtime.js'

/** A wedged daemon: its socket accepts connections and never answers. */
describe('DockerRuntime.ping against an engine that never answers', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-wedged-'))
  const socketPath = join(dir, 'docker.sock')
  const open: Socket[] = []
  let server: Server
  beforeAll(async () => {
    server = createServer((socket) => void open.push(socket))
    await new Promise<void>((resolve) => server.listen(socketPath, resolve))
  })
  afterAll(() => {
    for (const socket of open) socket.destroy()
    server.close()
    rmSync(dir, {recursive: true, force: true})
  })

  it('gives up after its timeout with DOCKER_UNREACHABLE (up pings while it holds the GPU lock)', async () => {
    const started = Date.now()
    const error = await new DockerRuntime({dockerOptions: {socketPath}}).ping(300).catch((e: unknown) => e)
    expect(error).toMatchObject({code: 'DOCKER_UNREACHABLE', message: 'the Docker engine did not answer within 0.3 s'})
    expect(Date.now() - started).toBeLessThan(3000)
    expect(open.length).toBe(1)
  })
})
