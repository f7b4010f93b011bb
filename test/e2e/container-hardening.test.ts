/**
 * A member's container on a shared box (issue 27, items 2-4), real Docker end to end, tried as a hostile member would:
 * their --env values (PATH, BASH_ENV, ENV, LD_PRELOAD) run nothing as root in the container and leave no root-owned
 * setuid file in their workspace, yet reach their own exec, ssh and login shells; the entrypoint chowns no mounted
 * folder; what is mounted is the folder that was checked, through a root-owned staging bind; a --volume may not land
 * where root acts; and the box's memory, pids and /dev/shm limits hold.
 */
import {spawnSync} from 'node:child_process'
import {chmodSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {jest} from '@jest/globals'
import {join} from 'node:path'

import {MEMBERS, SharedBox, STATE_DIR} from './shared-box.js'
import {BASE_IMAGE, docker} from './support.js'

jest.setTimeout(900_000)

const box = new SharedBox()
const B = MEMBERS.b
const homeB = box.home(B.user)
const ws = join(homeB, 'ws')
const names = {hostile: `${box.id}h`, lines: `${box.id}l`, shared: `${box.id}s`}
const TOKEN = `tok${Math.random().toString(36).slice(2, 10)}`
const X = `${TOKEN} it's "x" $HOME \`id\``
const LINES = `line one\nline 'two' $HOME\nINJECTED=1`
const GIB = 1024 ** 3
/** root-owned, empty, writable by everyone: what the old entrypoint handed to whoever mounted it */
const SHARED_EMPTY = `/srv/${box.id}-empty`
const hasCc = spawnSync('sh', ['-c', 'command -v cc']).status === 0
let before: unknown
let hostile: any

/** Programs the root part might look up on PATH: as root, each leaves a mark and a setuid shell in the workspace. */
const TOOLS = ['bash', 'sh', 'env', 'id', 'getent', 'grep', 'sort', 'awk', 'sed', 'stat', 'ls', 'cat', 'cp', 'mv', 'rm', 'ln', 'mkdir', 'chown', 'chmod']
const AS_ROOT = (what: string) =>
  `if [ "$(/usr/bin/id -u)" = 0 ]; then : >/workspace/ROOT-RAN-${what}; /usr/bin/cp /bin/sh /workspace/rootsh-${what}; /usr/bin/chmod 4755 /workspace/rootsh-${what}; fi`

/** Files under the workspace that root left there: none may exist, setuid ones least of all. */
function rootsFilesIn(dir: string): string[] {
  const found: string[] = []
  for (const name of readdirSync(dir)) {
    const file = join(dir, name)
    const info = lstatSync(file)
    if (info.uid === 0 || name.startsWith('ROOT-RAN') || name.startsWith('rootsh')) found.push(`${file} ${(info.mode & 0o7777).toString(8)}`)
    if (info.isDirectory()) found.push(...rootsFilesIn(file))
  }
  return found
}

/** The variables of the container's processes that run as root, one NAME=VALUE a line (docker exec as root, from the test). */
function rootEnvironments(id: string): string[] {
  const script = 'for p in /proc/[0-9]*; do [ "$(stat -c %u "$p")" = 0 ] && tr "\\0" "\\n" <"$p/environ"; echo; done 2>/dev/null; true'
  return docker(['exec', id, 'sh', '-c', script]).split('\n')
}

beforeAll(() => {
  box.setUp()
  const built = box.root(['build', '--base', BASE_IMAGE, '--json'])
  if (built.exitCode !== 0) throw new Error(`build: ${built.stdout}${built.stderr}`)
  // the limits this box sets for its members
  const limits = box.root(['system', 'install', '--container-memory', '8g', '--container-pids', '1024', '--shm-size-max', '2g', '--yes', '--json'])
  if (limits.exitCode !== 0) throw new Error(`system install: ${limits.stdout}${limits.stderr}`)
  // B's traps, all B's own files in B's workspace
  const evil = join(ws, 'evil')
  mkdirSync(evil)
  for (const tool of TOOLS) {
    writeFileSync(join(evil, tool), `#!/bin/sh\n${AS_ROOT(`path-${tool}`)}\nexec /usr/bin/${tool} "$@"\n`, {mode: 0o755})
  }
  writeFileSync(join(ws, 'x.sh'), `${AS_ROOT('bash-env')}\n`)
  if (hasCc) {
    writeFileSync(
      join(ws, 'evil.c'),
      `#include <stdlib.h>\n#include <unistd.h>\n__attribute__((constructor)) static void run(void) { if (getuid() == 0) system(${JSON.stringify(AS_ROOT('ld-preload'))}); }\n`,
    )
    const cc = spawnSync('cc', ['-shared', '-fPIC', '-o', join(ws, 'evil.so'), join(ws, 'evil.c')], {encoding: 'utf8'})
    if (cc.status !== 0) throw new Error(`cc: ${cc.stderr}`)
  }
  mkdirSync(join(ws, 'data'))
  writeFileSync(join(ws, 'data', 'mine'), 'mine\n')
  spawnSync('chown', ['-R', `${B.uid}:${B.uid}`, ws])
  mkdirSync(SHARED_EMPTY, {recursive: true})
  chmodSync(SHARED_EMPTY, 0o777)
  before = box.gpuState()
})

afterAll(() => {
  box.tearDown()
  rmSync(SHARED_EMPTY, {recursive: true, force: true})
})

describe("a member's --env values reach their own processes only", () => {
  it('up with a hostile PATH, BASH_ENV, ENV and LD_PRELOAD: nothing of theirs runs as root, no root-owned file lands in the workspace', () => {
    const env = [
      `PATH=/workspace/evil:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
      'BASH_ENV=/workspace/x.sh',
      'ENV=/workspace/x.sh',
      'LD_PRELOAD=/workspace/evil.so',
      `X=${X}`,
    ].flatMap((e) => ['--env', e])
    const up = box.json('b', ['up', 't4', '--name', names.hostile, '--workspace', ws, '--volume', `${join(ws, 'data')}:/data:ro`, ...env])
    expect({exit: up.exitCode, error: up.json.error}).toEqual({exit: 0, error: undefined})
    hostile = up.json
    expect(rootsFilesIn(ws)).toEqual([])
    // neither PID 1, nor the entrypoint, nor sshd, nor a root exec of Docker's has any of them
    const mine = (lines: string[]) => lines.filter((l) => /^(X|BASH_ENV|ENV|LD_PRELOAD|GPU_COSPLAY_USER_ENV_NAMES)=/.test(l) || l.includes('/workspace'))
    expect(mine(rootEnvironments(hostile.container.id))).toEqual([])
    expect(mine(JSON.parse(docker(['inspect', '--format', '{{json .Config.Env}}', hostile.container.id])))).toEqual([])
  })

  it('exec, ssh and a login shell of theirs see every value', () => {
    expect(box.cli('b', ['exec', names.hostile, '--', 'sh', '-c', 'printf %s "$X"'])).toMatchObject({exitCode: 0, stdout: X})
    expect(box.cli('b', ['ssh', names.hostile, '--', 'printf %s "$X"'])).toMatchObject({exitCode: 0, stdout: X})
    expect(box.cli('b', ['ssh', names.hostile, '--', 'bash -lc \'printf %s "$X"\''])).toMatchObject({exitCode: 0, stdout: X})
    // their PATH is theirs: their own tool ran, as them
    expect(box.cli('b', ['exec', names.hostile, '--', 'sh', '-c', 'command -v id'])).toMatchObject({exitCode: 0, stdout: '/workspace/evil/id\n'})
    // the exec's values are in no file another member could read
    const envFile = join(STATE_DIR, 'users', String(B.uid), `${names.hostile}.env`)
    expect({owner: statSync(envFile).uid, mode: (statSync(envFile).mode & 0o777).toString(8)}).toEqual({owner: 0, mode: '600'})
    expect(box.as('b', ['cat', envFile]).exitCode).not.toBe(0)
    expect(readFileSync(join(STATE_DIR, 'gpus', `${hostile.hostGpu.uuid}.json`), 'utf8')).not.toContain(TOKEN)
    // after all that, still nothing of root's in the workspace
    expect(rootsFilesIn(ws)).toEqual([])
  })

  it('a value with newlines reaches exec, ssh and login shells literally', () => {
    const up = box.json('b', ['up', 't4', '--name', names.lines, '--workspace', ws, '--env', `LINES=${LINES}`])
    expect({exit: up.exitCode, error: up.json.error}).toEqual({exit: 0, error: undefined})
    expect(box.cli('b', ['exec', names.lines, '--', 'sh', '-c', 'printf %s "$LINES"'])).toMatchObject({exitCode: 0, stdout: LINES})
    expect(box.cli('b', ['ssh', names.lines, '--', 'printf %s "$LINES"'])).toMatchObject({exitCode: 0, stdout: LINES})
    expect(box.cli('b', ['ssh', names.lines, '--', 'bash -lc \'printf %s "$LINES"; printf %s "${INJECTED-unset}"\''])).toMatchObject({
      exitCode: 0,
      stdout: `${LINES}unset`,
    })
    expect(box.cli('b', ['down', names.lines]).exitCode).toBe(0)
  })
})

describe('what is mounted', () => {
  it('is the checked folder, bound from a root-owned staging path; read-only where asked', () => {
    const mounts: {Source: string; Destination: string; RW: boolean}[] = JSON.parse(docker(['inspect', '--format', '{{json .Mounts}}', hostile.container.id]))
    const staging = join(STATE_DIR, 'mounts', names.hostile)
    expect(mounts.filter((m) => ['/workspace', '/data'].includes(m.Destination)).map((m) => [m.Destination, m.Source, m.RW])).toEqual(
      expect.arrayContaining([
        ['/workspace', join(staging, 'workspace'), true],
        ['/data', join(staging, 'volume-0'), false],
      ]),
    )
    expect({owner: statSync(join(STATE_DIR, 'mounts')).uid, mode: (statSync(join(STATE_DIR, 'mounts')).mode & 0o777).toString(8)}).toEqual({
      owner: 0,
      mode: '700',
    })
    expect(box.cli('b', ['exec', names.hostile, '--', 'cat', '/data/mine'])).toMatchObject({exitCode: 0, stdout: 'mine\n'})
    expect(box.cli('b', ['exec', names.hostile, '--', 'touch', '/data/new']).exitCode).not.toBe(0)
    expect(box.cli('b', ['exec', names.hostile, '--', 'sh', '-c', 'touch /workspace/from-inside && stat -c %u /workspace/from-inside']).stdout).toBe(
      `${B.uid}\n`,
    )
    expect(statSync(join(ws, 'from-inside')).uid).toBe(B.uid)
  })

  it('an empty root-owned folder a member may write stays root’s (the entrypoint chowns no mount)', () => {
    const up = box.json('b', ['up', 't4', '--name', names.shared, '--workspace', SHARED_EMPTY])
    expect({exit: up.exitCode, error: up.json.error}).toEqual({exit: 0, error: undefined})
    expect(statSync(SHARED_EMPTY).uid).toBe(0)
    expect(box.cli('b', ['down', names.shared]).exitCode).toBe(0)
  })

  it('a volume target where root acts, or an --shm-size over the ceiling, is refused before anything changes, leaving no probe container', () => {
    const changes = box.mutatingCalls().length
    for (const [flags, code] of [
      [['--workspace', ws, '--volume', `${join(ws, 'data')}:/var/run/x`], 'VOLUME_TARGET_NOT_ALLOWED'],
      [['--workspace', ws, '--volume', `${join(ws, 'data')}:/opt/gpu-cosplay`], 'VOLUME_TARGET_NOT_ALLOWED'],
      [['--workspace', ws, '--volume', `${join(ws, 'data')}:/home/${B.user}`], 'VOLUME_TARGET_NOT_ALLOWED'],
      [['--workspace', ws, '--volume', `${join(ws, 'data')}:/workspace/data`], 'VOLUME_TARGET_NOT_ALLOWED'],
      [['--workspace', ws, '--volume', `${join(ws, 'data')}:/lib/x86_64-linux-gnu`], 'VOLUME_TARGET_NOT_ALLOWED'],
      [['--workspace', ws, '--shm-size', '3g'], 'SHM_SIZE_NOT_ALLOWED'],
    ] as const) {
      const r = box.json('b', ['up', 't4', ...flags])
      expect({flags, exit: r.exitCode, code: r.json.error?.code}).toEqual({flags, exit: 4, code})
    }
    expect(box.mutatingCalls().length).toBe(changes)
    expect(docker(['ps', '-a', '--filter', 'label=io.gpu-cosplay.probe', '--format', '{{.ID}}']).trim()).toBe('')
  })
})

describe("the box's limits", () => {
  it("hold for a member's container: memory (no swap beyond), pids, and the /dev/shm asked", () => {
    const host = JSON.parse(docker(['inspect', '--format', '{{json .HostConfig}}', hostile.container.id]))
    expect({Memory: host.Memory, MemorySwap: host.MemorySwap, PidsLimit: host.PidsLimit, ShmSize: host.ShmSize}).toEqual({
      Memory: 8 * GIB,
      MemorySwap: 8 * GIB,
      PidsLimit: 1024,
      ShmSize: GIB,
    })
  })
})

describe('the end', () => {
  it('down leaves nothing staged or mounted, and the GPU as it was', () => {
    expect(box.cli('b', ['down', names.hostile]).exitCode).toBe(0)
    expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(join(STATE_DIR, 'mounts'))
    expect(existsSync(join(STATE_DIR, 'mounts', names.hostile))).toBe(false)
    expect(existsSync(join(STATE_DIR, 'users', String(B.uid), `${names.hostile}.env`))).toBe(false)
    expect(box.gpuState()).toEqual(before)
    expect(rootsFilesIn(ws)).toEqual([])
  })
})
