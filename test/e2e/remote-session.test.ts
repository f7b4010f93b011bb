/**
 * ssh, exec and ssh-config --host end to end, with a real session container on the box. The box (see
 * remote-box.ts) shares this machine's Docker engine (its socket, tester in the socket's group) and network
 * (--network host, its sshd on a free loopback port): the session container it starts is a sibling whose
 * sshd is published on 127.0.0.1, which is the box's loopback too. The engine resolves bind mounts on this
 * machine, so what the box mounts into a session (the workspace, and for an image without sshd the entrypoint from
 * the bundle installed in tester's home) lies in a folder with the same path on both sides. The client is the
 * built CLI here, with its own HOME.
 */
import {spawnSync} from 'node:child_process'
import {chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {jest} from '@jest/globals'
import ssh2 from 'ssh2'

import {SshSession} from '../../src/container/ssh-client.js'
import {BOX_IMAGE, BOX_LABEL, buildBoxImage, cliClient, clientHome, freePort, pinnedKey, type Result, waitForSshd} from './remote-box.js'
import {BASE_IMAGE, BIN, containersOf, docker, NO_SSHD_IMAGE, removeContainers, version} from './support.js'

jest.setTimeout(300_000)

const ID = `rs${process.pid}`
/** spaces, quotes, $, ;, a backslash and a newline: what a shell in between would mangle */
const ODD = "a b'c$d;e\\f\ng"

let home: string
let shared: string
let workspace: string
let boxId: string
let url: string
let port: number

const {client, clientJson} = cliClient(() => home)

function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`
}

/** The real OpenSSH client with the config --install wrote (and the box's block for the jump). */
function openssh(args: readonly string[]): Result {
  const r = spawnSync('ssh', ['-F', join(home, '.ssh', 'config'), ...args], {encoding: 'utf8', input: '', timeout: 60_000})
  return {exitCode: r.status, stdout: r.stdout, stderr: r.stderr}
}

beforeAll(async () => {
  home = clientHome()
  buildBoxImage(join(home, '.ssh', 'id_ed25519.pub'))
  docker(['build', '-q', '-t', NO_SSHD_IMAGE, '-'], `FROM ${BASE_IMAGE}\nRUN rm -f /usr/sbin/sshd\n`)
  // the box's `up` finds the cosplay image in the shared engine, as after a `gpu-cosplay build` there
  if (spawnSync('docker', ['image', 'inspect', `gpu-cosplay:${version()}`], {stdio: 'ignore'}).status !== 0) {
    const built = spawnSync(process.execPath, [BIN, 'build', '--base', BASE_IMAGE, '--json'], {encoding: 'utf8'})
    if (built.status !== 0) throw new Error(`build: ${built.stdout}${built.stderr}`)
  }
  shared = mkdtempSync('/tmp/gpu-cosplay-e2e-boxshare-')
  chmodSync(shared, 0o755)
  workspace = join(shared, 'ws')
  mkdirSync(workspace)
  chmodSync(workspace, 0o777)
  port = await freePort()
  boxId = docker([
    'run',
    '-d',
    '--label',
    BOX_LABEL,
    '--network',
    'host',
    '-v',
    '/var/run/docker.sock:/var/run/docker.sock',
    '-v',
    `${shared}:${shared}`,
    BOX_IMAGE,
    '/usr/sbin/sshd',
    '-D',
    '-e',
    '-p',
    String(port),
    '-o',
    'ListenAddress=127.0.0.1',
  ]).trim()
  const socketGid = statSync('/var/run/docker.sock').gid
  docker([
    'exec',
    boxId,
    'sh',
    '-ec',
    `getent group ${socketGid} >/dev/null || groupadd -g ${socketGid} hostdocker; usermod -aG "$(getent group ${socketGid} | cut -d: -f1)" tester
     cp -a /home/tester ${shared}/home && usermod -d ${shared}/home tester`,
  ])
  url = `ssh://tester@127.0.0.1:${port}`
  await waitForSshd(port)
  const boxKey = pinnedKey(docker(['exec', boxId, 'cat', '/etc/ssh/ssh_host_ed25519_key.pub']))
  writeFileSync(join(home, '.ssh', 'known_hosts'), `[127.0.0.1]:${port} ${boxKey}\n`)
  // OpenSSH takes ~ from the password file, not $HOME: tell the jump to the box where this HOME keeps its files
  writeFileSync(
    join(home, '.ssh', 'config'),
    `Host 127.0.0.1\n  IdentityFile ${home}/.ssh/id_ed25519\n  IdentitiesOnly yes\n  UserKnownHostsFile ${home}/.ssh/known_hosts\n  BatchMode yes\n`,
  )
  const installed = clientJson(['remote', 'install', '--host', url])
  if (installed.exitCode !== 0) throw new Error(`remote install: ${installed.stdout}${installed.stderr}`)
}, 900_000)

afterAll(() => {
  removeContainers(ID)
  if (boxId) docker(['rm', '-f', boxId])
  for (const dir of [home, shared]) if (dir) rmSync(dir, {recursive: true, force: true})
})

describe('a session with sshd on the box', () => {
  const name = `${ID}-ssh`

  beforeAll(() => {
    const up = clientJson(['up', '3090', '--host', url, '--name', name, '--workspace', workspace])
    if (up.exitCode !== 0) throw new Error(`up --host: ${up.stdout}${up.stderr}`)
    expect(up.json.container.sshPort).toEqual(expect.any(Number))
  })

  it('ssh --host runs a command line in the container exactly as typed, and its exit code becomes ours', () => {
    const line = `printf '%s\\n' ${shellQuote(ODD)} "$(id -un)" "$GPU_COSPLAY_NAME"; exit 7`
    const r = client(['ssh', name, '--host', url, '--', line])
    expect({out: r.stdout, code: r.exitCode}).toEqual({out: `${ODD}\ntester\nNVIDIA GeForce RTX 3090\n`, code: 7})
  })

  it('ssh with GPU_COSPLAY_HOST and no NAME: the only session on the box', () => {
    const r = client(['ssh', '--', 'exit 9'], {env: {GPU_COSPLAY_HOST: url}})
    expect(r.exitCode).toBe(9)
  })

  it('exec --host: every argv word arrives exactly, stdin is piped through, the exit code comes back', () => {
    const r = client(['exec', name, '--host', url, '--', 'sh', '-c', 'cat; printf "%s\\n" "$1"; exit 7', '_', ODD], {input: 'from stdin\n'})
    expect({out: r.stdout, err: r.stderr, code: r.exitCode}).toEqual({out: `from stdin\n${ODD}\n`, err: '', code: 7})
  })

  it('with a terminal: ssh --host opens a login shell on a pty, exec --host gets one; exit codes come back', () => {
    // script(1) gives the client a pty; what is typed goes to the remote shell, $((6*7)) is computed there
    const inPty = (args: readonly string[], input: string) => {
      const line = [process.execPath, BIN, ...args].map(shellQuote).join(' ')
      const r = spawnSync('script', ['-qec', line, '/dev/null'], {
        encoding: 'utf8',
        env: {PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: home, TERM: 'xterm', NO_COLOR: '1'},
        input,
        timeout: 60_000,
      })
      return {out: r.stdout, code: r.status}
    }
    const shell = inPty(['ssh', name, '--host', url], 'echo "pty-$((6*7))-$(tty)"; exit 5\n')
    expect(shell.out).toMatch(/pty-42-\/dev\/pts\//)
    expect(shell.code).toBe(5)
    const exec = inPty(['exec', name, '--host', url, '--', 'sh', '-c', 'test -t 0 && test -t 1 && echo on-a-tty; exit 6'], '')
    expect(exec.out).toContain('on-a-tty')
    expect(exec.code).toBe(6)
  })

  it('exec --host for a session the box does not have: the box exit code (2) comes back', () => {
    const r = client(['exec', 'no-such-session', '--host', url, '--', 'true'])
    expect(r.exitCode).toBe(2)
    expect(r.stderr).toContain('no session named "no-such-session"')
  })

  it('ssh-config --host --install: OpenSSH itself logs in through the box (ProxyJump) with the pinned host key', () => {
    const r = clientJson(['ssh-config', name, '--host', url, '--install'])
    expect(r.exitCode).toBe(0)
    const alias = `gpu-cosplay-127.0.0.1-${port}-${name}`
    const sessionKey = pinnedKey(docker(['exec', `gpu-cosplay-${name}`, 'cat', '/etc/ssh/ssh_host_ed25519_key.pub']))
    expect(r.json).toMatchObject({host: alias, hostName: '127.0.0.1', proxyJump: `tester@127.0.0.1:${port}`, hostKey: sessionKey})
    expect(readFileSync(r.json.knownHostsFile, 'utf8')).toBe(`${alias} ${sessionKey}\n`)
    expect(statSync(r.json.identityFile).mode & 0o077).toBe(0)
    expect(openssh(['-G', alias]).stdout).toMatch(new RegExp(`^proxyjump tester@\\[?127\\.0\\.0\\.1\\]?:${port}$`, 'm'))

    const logged = openssh([alias, 'printf "%s\\n" "$GPU_COSPLAY_NAME"; exit 3'])
    expect({out: logged.stdout, code: logged.exitCode}).toEqual({out: 'NVIDIA GeForce RTX 3090\n', code: 3})

    // another key filed for the alias: OpenSSH refuses the container (255), then the real one works again
    const other = pinnedKey(ssh2.utils.generateKeyPairSync('ed25519').public)
    writeFileSync(r.json.knownHostsFile, `${alias} ${other}\n`)
    expect(openssh([alias, 'true']).exitCode).toBe(255)
    writeFileSync(r.json.knownHostsFile, `${alias} ${sessionKey}\n`)
    expect(openssh([alias, 'true']).exitCode).toBe(0)
  })

  it('the ssh2 login refuses a container whose host key is not the pinned one (SSH_HOST_KEY_MISMATCH), and takes the right one', async () => {
    const config = clientJson(['ssh-config', name, '--host', url])
    const key = readFileSync(config.json.identityFile, 'utf8')
    const target = {host: '127.0.0.1', port: config.json.port, username: config.json.user, privateKey: key}
    const other = ssh2.utils.generateKeyPairSync('ed25519').public.trim()
    await expect(SshSession.connectWithRetry({...target, hostKey: other}, {timeoutMs: 10_000})).rejects.toMatchObject({code: 'SSH_HOST_KEY_MISMATCH', exit: 5})
    const ssh = await SshSession.connectWithRetry({...target, hostKey: config.json.hostKey}, {timeoutMs: 10_000})
    try {
      expect((await ssh.exec('id -un')).stdout.trim()).toBe('tester')
    } finally {
      ssh.close()
    }
  })

  it('down --host removes the container', () => {
    expect(clientJson(['down', name, '--host', url]).exitCode).toBe(0)
    expect(containersOf(name)).toEqual([])
  })
})

describe('a session without sshd on the box', () => {
  const name = `${ID}-nosshd`

  it('ssh --host goes through gpu-cosplay ssh on the box; ssh-config --host says NO_SSHD (exit 5)', () => {
    const up = clientJson(['up', '3090', '--host', url, '--name', name, '--workspace', workspace, '--image', NO_SSHD_IMAGE])
    expect(up.exitCode).toBe(0)
    expect(up.json.container.sshPort).toBeNull()
    const r = client(['ssh', name, '--host', url, '--', `printf '%s\\n' ${shellQuote(ODD)}; exit 4`])
    expect({out: r.stdout, code: r.exitCode}).toEqual({out: `${ODD}\n`, code: 4})
    const config = clientJson(['ssh-config', name, '--host', url])
    expect([config.json.error.code, config.exitCode]).toEqual(['NO_SSHD', 5])
    expect(existsSync(join(home, '.ssh', 'gpu-cosplay', `gpu-cosplay-127.0.0.1-${port}-${name}.known_hosts`))).toBe(false)
    expect(clientJson(['down', name, '--host', url]).exitCode).toBe(0)
    expect(containersOf(name)).toEqual([])
  })
})
