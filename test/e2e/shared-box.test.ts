/**
 * The shared box (issue 17), real Docker end to end: gpu-cosplay installed for the whole box, `system install`, two
 * members of its group who are in neither the docker group nor sudoers. Both work; the second, trying what a hostile
 * teammate would, can neither end, enter nor read the first's session, nor make root run, read or mount anything of
 * their choosing, nor get root in their own container. The GPU ends as it was found.
 */
import {statSync} from 'node:fs'
import {jest} from '@jest/globals'
import {join} from 'node:path'

import {CLI, GROUP, MEMBERS, SharedBox, STATE_DIR} from './shared-box.js'
import {BASE_IMAGE, docker} from './support.js'

jest.setTimeout(900_000)

const box = new SharedBox()
const SECRET = `s3cret-${Math.random().toString(36).slice(2)}`
const names = {a: `${box.id}a`, b: `${box.id}b`}
let installed: any
let before: unknown

beforeAll(() => {
  installed = box.setUp()
  // the image the engine pins: built by root on the local base (no network here)
  const built = box.root(['build', '--base', BASE_IMAGE, '--json'])
  if (built.exitCode !== 0) throw new Error(`build: ${built.stdout}${built.stderr}`)
  before = box.gpuState()
})
afterAll(() => box.tearDown())

const mode = (file: string) => statSync(file).mode & 0o7777
const owner = (file: string) => statSync(file).uid

describe('system install', () => {
  it('leaves the configuration, entry point, sudoers rule and state directory root-owned and healthy', () => {
    expect(installed.config).toMatchObject({group: GROUP, stateDir: STATE_DIR, allowContainerSudo: false})
    const status = box.root(['system', 'status', '--json'])
    expect(status.exitCode).toBe(0)
    expect(JSON.parse(status.stdout)).toMatchObject({installed: true, healthy: true})
    for (const [file, m] of [
      ['/etc/gpu-cosplay/config.yaml', 0o644],
      ['/usr/local/libexec/gpu-cosplay/engine', 0o755],
      ['/etc/sudoers.d/gpu-cosplay', 0o440],
      [STATE_DIR, 0o755],
    ] as const) {
      expect({file, owner: owner(file), mode: mode(file).toString(8)}).toEqual({file, owner: 0, mode: m.toString(8)})
    }
    // again: nothing to change
    const again = box.root(['system', 'install', '--yes', '--json'])
    expect(again.exitCode).toBe(0)
    const items: {what: string; action: string}[] = JSON.parse(again.stdout).items
    // the five of the engine, and the reaper's timer or cron entry where this box has systemd or cron
    expect(items.length).toBeGreaterThanOrEqual(5)
    expect(items.filter((i) => i.action !== 'unchanged')).toEqual([])
  })

  it('members have no Docker and no sudo of their own; doctor says the box is installed', () => {
    expect(box.as('b', ['docker', 'ps']).exitCode).not.toBe(0)
    expect(box.as('b', ['sudo', '-n', 'true']).exitCode).not.toBe(0)
    const doctor = box.json('b', ['doctor'])
    expect(doctor.json.checks.find((c: {name: string}) => c.name === 'shared box')).toMatchObject({status: 'ok'})
  })
})

describe('two members share the GPU', () => {
  it('A brings up a container session and reaches it over ssh and exec as themselves', () => {
    const up = box.json('a', ['up', '3090', '--name', names.a, '--workspace', join(box.home(MEMBERS.a.user), 'ws'), '--env', `API_TOKEN=${SECRET}`])
    expect({exit: up.exitCode, error: up.json.error}).toEqual({exit: 0, error: undefined})
    expect(up.json.container.user).toBe(MEMBERS.a.user)
    expect(box.cli('a', ['ssh', names.a, '--', 'id', '-u'])).toMatchObject({exitCode: 0, stdout: `${MEMBERS.a.uid}\n`})
    expect(box.cli('a', ['exec', names.a, '--', 'sh', '-c', 'id -u; echo $API_TOKEN'])).toMatchObject({exitCode: 0, stdout: `${MEMBERS.a.uid}\n${SECRET}\n`})
  })

  it("A installs the VS Code entry; OpenSSH logs in with A's own key and the pinned host key", () => {
    const r = box.json('a', ['ssh-config', names.a, '--install'])
    expect({exit: r.exitCode, error: r.json.error}).toEqual({exit: 0, error: undefined})
    expect(r.json).toMatchObject({host: `gpu-cosplay-${names.a}`, proxyJump: null, user: MEMBERS.a.user})
    expect(r.json.entry).toContain('StrictHostKeyChecking yes')
    expect(r.json.entry).not.toMatch(/StrictHostKeyChecking no/)
    const homeA = box.home(MEMBERS.a.user)
    for (const file of [r.json.identityFile, r.json.knownHostsFile]) {
      expect({file, owner: owner(file), inHome: file.startsWith(`${homeA}/`)}).toEqual({file, owner: MEMBERS.a.uid, inHome: true})
    }
    const login = box.as('a', ['ssh', '-o', 'BatchMode=yes', r.json.host, 'id -u'])
    expect({exit: login.exitCode, out: login.stdout, err: login.stderr}).toMatchObject({exit: 0, out: `${MEMBERS.a.uid}\n`})
  })

  it("B sees A's session in ps and status, without A's --env values", () => {
    for (const command of ['ps', 'status']) {
      const r = box.cli('b', [command, '--json'])
      expect(r.stdout).toContain(names.a)
      expect(r.stdout).not.toContain(SECRET)
    }
  })

  it("B can neither end, enter, configure nor check A's session", () => {
    // exec and ssh print no JSON (their output is the command's): the exit code says it
    for (const args of [
      ['exec', names.a, '--', 'id'],
      ['ssh', names.a, '--', 'id'],
    ]) {
      const r = box.cli('b', args)
      expect({args, exit: r.exitCode, out: r.stdout}).toEqual({args, exit: 4, out: ''})
    }
    for (const args of [
      ['down', names.a],
      ['ssh-config', names.a],
      ['verify', names.a],
      ['report', names.a],
    ]) {
      const r = box.json('b', args)
      expect({args, exit: r.exitCode, code: r.json.error?.code}).toEqual({args, exit: 4, code: 'NOT_OWNER'})
    }
    expect(box.cli('a', ['ssh', names.a, '--', 'true']).exitCode).toBe(0)
  })

  it("B may not reset the GPU, change the installation, rebuild everyone's image nor hold GPU-wide settings", () => {
    for (const args of [
      ['reset', '--host-gpu', '0', '--yes'],
      ['build', '--base', BASE_IMAGE],
      ['lease', 'hold', '--holder', 'mine', '--clock-mhz', '1000'],
      ['calibrate'],
      ['up', 't4', '--lock-clock', '--workspace', join(box.home(MEMBERS.b.user), 'ws')],
      ['up', 't4', '--cap-power', '--workspace', join(box.home(MEMBERS.b.user), 'ws')],
      ['up', 't4', '--ssh-port', '80', '--workspace', join(box.home(MEMBERS.b.user), 'ws')],
      ['system', 'install', '--yes'],
      ['system', 'uninstall', '--yes'],
    ]) {
      const r = box.json('b', args)
      expect({args, exit: r.exitCode, code: r.json.error?.code}).toEqual({args, exit: 4, code: 'ROOT_ONLY'})
    }
    // metrics prints no JSON (it serves): refused before it listens
    for (const listen of ['0.0.0.0:9477', '127.0.0.1:80']) {
      const r = box.cli('b', ['metrics', '--listen', listen])
      expect({listen, exit: r.exitCode, said: /only root/.test(r.stderr)}).toEqual({listen, exit: 4, said: true})
    }
  })

  it('B cannot mount what B may not read, through a link either; nothing on the GPU changes', () => {
    const homeB = box.home(MEMBERS.b.user)
    expect(box.as('b', ['ln', '-s', box.home(MEMBERS.a.user), join(homeB, 'to-a')]).exitCode).toBe(0)
    const changesBefore = box.mutatingCalls().length
    const ws = ['--workspace', join(homeB, 'ws')]
    for (const [flags, code] of [
      [['--workspace', join(box.home(MEMBERS.a.user), 'ws')], 'MOUNT_NOT_ALLOWED'],
      [['--workspace', join(homeB, 'to-a')], 'MOUNT_NOT_ALLOWED'],
      [[...ws, '--volume', '/root:/x'], 'MOUNT_NOT_ALLOWED'],
      [[...ws, '--volume', '/etc/shadow:/x:ro'], 'MOUNT_NOT_ALLOWED'],
      [[...ws, '--volume', '/usr/share:/x'], 'MOUNT_NOT_ALLOWED'],
      [[...ws, '--volume', `${join(homeB, 'to-a')}/ws:/x:ro`], 'MOUNT_NOT_ALLOWED'],
      [[...ws, '--volume', 'somebodys-volume:/x'], 'BAD_VOLUME'],
    ] as const) {
      const r = box.json('b', ['up', 't4', ...flags])
      expect({flags, exit: r.exitCode, code: r.json.error?.code}).toEqual({flags, exit: 4, code})
    }
    expect(box.mutatingCalls().length).toBe(changesBefore)
  })

  it("B's variables and options never reach root", () => {
    const homeB = box.home(MEMBERS.b.user)
    const spy = join(homeB, 'spy.cjs')
    const seen = join('/tmp', `${box.id}-seen`)
    expect(
      box.as('b', [
        'sh',
        '-c',
        `printf '%s\\n' "require('fs').appendFileSync('${seen}', process.getuid() + '\\\\n')" > ${spy}; printf '#!/bin/sh\\nid -u >> ${seen}\\n' > ${homeB}/smi; chmod +x ${homeB}/smi`,
      ]).exitCode,
    ).toBe(0)
    box.cli('b', ['ps'], {NODE_OPTIONS: `--require ${spy}`})
    box.cli('b', ['status'], {GPU_COSPLAY_NVIDIA_SMI: `${homeB}/smi`})
    const engine = '/usr/local/libexec/gpu-cosplay/engine'
    // sudo itself refuses a variable or the caller's environment for the engine
    expect(box.as('b', ['sudo', '-n', `GPU_COSPLAY_NVIDIA_SMI=${homeB}/smi`, engine, 'status']).exitCode).not.toBe(0)
    expect(box.as('b', ['sudo', '-n', '-E', engine, 'status'], {GPU_COSPLAY_NVIDIA_SMI: `${homeB}/smi`, NODE_OPTIONS: `--require ${spy}`}).exitCode).not.toBe(0)
    // the engine run directly (not through sudo) is not root and says so
    expect(box.as('b', [engine, 'ps']).exitCode).not.toBe(0)
    const uids = box.as('b', ['cat', seen]).stdout.split('\n').filter(Boolean)
    expect(uids.length).toBeGreaterThan(0)
    expect(new Set(uids)).toEqual(new Set([String(MEMBERS.b.uid)]))
  })

  it("B cannot write anywhere the engine acts, nor read A's key", () => {
    for (const dir of [
      STATE_DIR,
      join(STATE_DIR, 'gpus'),
      join(STATE_DIR, 'sessions'),
      join(STATE_DIR, 'users'),
      '/etc/gpu-cosplay',
      '/usr/local/libexec/gpu-cosplay',
    ]) {
      expect({dir, writable: box.as('b', ['test', '-w', dir]).exitCode === 0}).toEqual({dir, writable: false})
    }
    const keyOfA = join(STATE_DIR, 'users', String(MEMBERS.a.uid), 'ssh', 'id_ed25519')
    expect(owner(keyOfA)).toBe(0)
    expect(box.as('b', ['cat', keyOfA]).exitCode).not.toBe(0)
    expect(box.as('b', ['docker', 'inspect', names.a]).exitCode).not.toBe(0)
  })

  it("B's own session: a link planted as B's public key reads nothing of root's", () => {
    const homeB = box.home(MEMBERS.b.user)
    expect(box.as('b', ['sh', '-c', `mkdir -p ${homeB}/.ssh && ln -sf /etc/shadow ${homeB}/.ssh/id_ed25519.pub`]).exitCode).toBe(0)
    const up = box.json('b', ['up', 't4', '--name', names.b, '--workspace', join(homeB, 'ws')])
    expect({exit: up.exitCode, error: up.json.error}).toEqual({exit: 0, error: undefined})
    const env = docker(['inspect', '--format', '{{json .Config.Env}}', up.json.container.id])
    expect(env).not.toMatch(/root:/)
    expect(box.cli('b', ['ssh', names.b, '--', 'id', '-u'])).toMatchObject({exitCode: 0, stdout: `${MEMBERS.b.uid}\n`})
  })

  it("B gets no root in B's own container, and no sudo where the box does not allow it", () => {
    expect(box.cli('b', ['ssh', names.b, '--', 'sudo', '-n', 'true']).exitCode).not.toBe(0)
    const status = box.cli('b', ['ssh', names.b, '--', "grep -E '^(NoNewPrivs|CapEff)' /proc/self/status"])
    expect(status.stdout.replace(/[ \t]+/g, ' ')).toBe('CapEff: 0000000000000000\nNoNewPrivs: 1\n')
    // a setuid copy of a shell in the workspace is B's, not root's
    expect(box.cli('b', ['ssh', names.b, '--', 'cp /bin/sh /workspace/sh && chmod 4755 /workspace/sh']).exitCode).toBe(0)
    expect(owner(join(box.home(MEMBERS.b.user), 'ws', 'sh'))).toBe(MEMBERS.b.uid)
    const sudo = box.json('b', ['up', 't4', '--sudo', '--workspace', join(box.home(MEMBERS.b.user), 'ws')])
    expect({exit: sudo.exitCode, code: sudo.json.error?.code}).toEqual({exit: 4, code: 'CONTAINER_SUDO_NOT_ALLOWED'})
  })

  it("B's own image runs as B, with nothing of root", () => {
    const name = `${box.id}i`
    const up = box.json('b', ['up', 't4', '--name', name, '--image', BASE_IMAGE, '--workspace', join(box.home(MEMBERS.b.user), 'ws')])
    expect({exit: up.exitCode, error: up.json.error}).toEqual({exit: 0, error: undefined})
    expect(docker(['inspect', '--format', '{{.Config.User}}', up.json.container.id]).trim()).toBe(`${MEMBERS.b.uid}:${MEMBERS.b.uid}`)
    // the exec'd command and PID 1 (the entrypoint) alike
    const ids = box.cli('b', ['exec', name, '--', 'sh', '-c', 'id -u; grep ^Uid: /proc/1/status'])
    expect({exit: ids.exitCode, out: ids.stdout.replace(/\s+/g, ' ').trim()}).toEqual({
      exit: 0,
      out: `${MEMBERS.b.uid} Uid: ${Array(4).fill(MEMBERS.b.uid).join(' ')}`,
    })
    expect(box.cli('b', ['down', name]).exitCode).toBe(0)
  })

  it('each takes theirs down; the GPU is as it was found', () => {
    expect(box.cli('a', ['down', names.a]).exitCode).toBe(0)
    expect(box.cli('b', ['down', names.b]).exitCode).toBe(0)
    expect(box.gpuState()).toEqual(before)
    expect(docker(['ps', '-a', '--filter', `label=io.gpu-cosplay.session`, '--format', '{{.Names}}'])).not.toContain(box.id)
  })
})

test('the installed CLI is the tarball npm pack made, root-owned', () => {
  expect(owner(CLI)).toBe(0)
})
