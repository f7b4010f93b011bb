import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import ssh2 from 'ssh2'

import {SshTransport} from '../../../src/remote/ssh-transport.js'

const {Server, utils} = ssh2

describe('SshTransport.exec', () => {
  let dir: string
  let server: InstanceType<typeof Server>
  let port: number
  /** resolves when the box got the exec request; call the function to open the channel */
  let execRequested: Promise<() => void>

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ssh-transport-'))
    const hostKey = utils.generateKeyPairSync('ed25519')
    const clientKey = utils.generateKeyPairSync('ed25519')
    writeFileSync(join(dir, 'id_ed25519'), clientKey.private, {mode: 0o600})
    let onExec: (accept: () => void) => void = () => {}
    execRequested = new Promise((resolve) => (onExec = resolve))
    server = new Server({hostKeys: [hostKey.private]}, (client) => {
      client.on('authentication', (context) => context.accept())
      client.on('session', (acceptSession) => {
        acceptSession().on('exec', (accept) => {
          // the box answers only when the test says so: the channel is not open on our side until then
          onExec(() => {
            const channel = accept()
            // a remote `up` that runs until its stdin ends (our Ctrl-C), then exits 130
            channel.on('end', () => {
              channel.exit(130)
              channel.end()
            })
            channel.resume()
          })
        })
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as AddressInfo).port
    writeFileSync(join(dir, 'known_hosts'), `[127.0.0.1]:${port} ${hostKey.public.trim()}\n`)
  })

  afterEach(async () => {
    await new Promise<void>((resolve) => server.close(() => resolve()))
    rmSync(dir, {recursive: true, force: true})
  })

  it('passes on a Ctrl-C that came before the channel opened: the command still sees its stdin end', async () => {
    const endpoint = {
      label: 'box',
      host: '127.0.0.1',
      port,
      user: 'tester',
      identityFiles: [join(dir, 'id_ed25519')],
      knownHostsFiles: [join(dir, 'known_hosts')],
      jump: null,
    }
    const transport = await SshTransport.connect(endpoint, {})
    try {
      const running = transport.exec('gpu-cosplay up')
      const openChannel = await execRequested
      running.endInput()
      openChannel()
      expect((await running.done).exitCode).toBe(130)
    } finally {
      transport.close()
    }
  })
})
