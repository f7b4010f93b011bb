/**
 * SshSession on the one ssh2 client (core/ssh-connection.ts), against an in-process ssh2 server: the pinned host key,
 * a command's output capped at 64 KiB per stream, and a command that never ends cut off by its timeout.
 */
import type {AddressInfo} from 'node:net'

import ssh2 from 'ssh2'

import {SshSession} from '../../../src/container/ssh-client.js'

const {Server, utils} = ssh2

const hostKey = utils.generateKeyPairSync('ed25519')
const otherKey = utils.generateKeyPairSync('ed25519')
const clientKey = utils.generateKeyPairSync('ed25519')

describe('SshSession', () => {
  let server: InstanceType<typeof Server>
  let port: number

  beforeAll(async () => {
    server = new Server({hostKeys: [hostKey.private]}, (client) => {
      client.on('error', () => undefined) // the client that refused our host key hangs up mid key exchange
      client.on('authentication', (context) => context.accept())
      client.on('session', (acceptSession) => {
        acceptSession().on('exec', (accept, _reject, info) => {
          const channel = accept()
          if (info.command === 'flood') {
            channel.write(Buffer.alloc(200 * 1024, 'o'))
            channel.stderr.write(Buffer.alloc(100 * 1024, 'e'))
            channel.exit(3)
            channel.end()
          }
          // 'hang': never answers, never ends
        })
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
  })

  afterAll(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()))
  })

  const target = (pinned?: string) => ({host: '127.0.0.1', port, username: 'tester', privateKey: clientKey.private, ...(pinned ? {hostKey: pinned} : {})})

  it('logs in with the pinned host key, keeps 64 KiB of each stream and the exit code', async () => {
    const ssh = await SshSession.connectWithRetry(target(hostKey.public.trim()), {timeoutMs: 5_000})
    try {
      expect(ssh.hostKey.split(' ')[1]).toBe(hostKey.public.trim().split(' ')[1])
      const ran = await ssh.exec('flood')
      expect([ran.stdout.length, ran.stderr.length, ran.exitCode]).toEqual([64 * 1024, 64 * 1024, 3])
    } finally {
      ssh.close()
    }
  })

  it('refuses a host key other than the pinned one, at once', async () => {
    await expect(SshSession.connectWithRetry(target(otherKey.public.trim()), {timeoutMs: 5_000})).rejects.toMatchObject({code: 'SSH_HOST_KEY_MISMATCH'})
  })

  it('cuts off a command that does not end within its timeout', async () => {
    const ssh = await SshSession.connectWithRetry(target(), {timeoutMs: 5_000})
    try {
      await expect(ssh.exec('hang', {timeoutMs: 200})).rejects.toMatchObject({code: 'SSH_EXEC_TIMEOUT', exit: 5})
    } finally {
      ssh.close()
    }
  })
})
