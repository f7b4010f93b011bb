import {mkdtempSync, rmSync} from 'node:fs'
import {createServer, type Server, type Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {DockerRuntime} from '../../../src/container/runtime.js'

/** A wedged daemon: its socket accepts connections and never answers. */
describe('DockerRuntime against an engine that never answers', () => {
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

  it.each([
    ['create', (r: DockerRuntime) => r.createAndStart({name: 'x', image: 'i', labels: {}, env: {}, deviceIds: null, sshPort: null}), 'CONTAINER_CREATE_FAILED'],
    ['list', (r: DockerRuntime) => r.listByLabel({'io.gpu-cosplay.session': 'x'}), 'CONTAINER_LIST_FAILED'],
    ['remove', (r: DockerRuntime) => r.remove('0123456789ab'), 'CONTAINER_REMOVE_FAILED'],
  ])('a %s made under the GPU lock gives up after its deadline, naming the wait', async (_, call, code) => {
    const started = Date.now()
    const error = await call(new DockerRuntime({dockerOptions: {socketPath}, callTimeoutMs: 300})).catch((e: unknown) => e)
    expect(error).toMatchObject({code, message: expect.stringContaining('the Docker engine did not answer within 0.3 s')})
    expect(Date.now() - started).toBeLessThan(3000)
  })
})
