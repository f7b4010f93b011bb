import {createServer, type Server} from 'node:net'

import ssh2 from 'ssh2'

import {SshSession} from '../../../src/container/ssh-client.js'

const privateKey = ssh2.utils.generateKeyPairSync('ed25519').private

/** What docker-proxy does while sshd is not up yet: accept, then drop the connection. */
function droppingServer(): Promise<{server: Server; port: number}> {
  const server = createServer((socket) => socket.destroy())
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({server, port: (server.address() as {port: number}).port})))
}

describe('SshSession.connectWithRetry', () => {
  let server: Server
  let port: number
  beforeAll(async () => ({server, port} = await droppingServer()))
  afterAll(() => server.close())
  const target = () => ({host: '127.0.0.1', port, username: 'u', privateKey})

  it('gives up after its timeout with SSH_UNREACHABLE, having retried', async () => {
    const error = await SshSession.connectWithRetry(target(), {timeoutMs: 300}).catch((e: unknown) => e)
    expect(error).toMatchObject({code: 'SSH_UNREACHABLE'})
    expect((error as Error).message).toMatch(/\((\d+) attempts\)/)
    expect(Number(/\((\d+) attempts\)/.exec((error as Error).message)![1])).toBeGreaterThan(3)
    expect(((error as Error).cause as Error).message).toMatch(/ECONNRESET|Connection lost/)
  })

  it('stops at once when its signal aborts (the session is being undone)', async () => {
    const stop = new AbortController()
    const started = Date.now()
    setTimeout(() => stop.abort(), 100)
    const error = await SshSession.connectWithRetry(target(), {timeoutMs: 15_000, signal: stop.signal}).catch((e: unknown) => e)
    expect((error as Error).name).toBe('AbortError')
    expect(Date.now() - started).toBeLessThan(2000)
  })
})
