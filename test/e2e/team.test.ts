/**
 * The team scene, real Docker end to end (test/e2e/run.sh, as root): two non-root users, `cosplayer` and
 * `cosplayer2`, share one simulated H200 and one state directory (1777, root's, like /var/lib/gpu-cosplay). Each
 * brings up a container session, reaches it over ssh with their `--env` values intact, cannot end the other's, and
 * takes theirs down; the GPU ends as it was found.
 *
 * Contract with the TS side this test relies on (issues 10, 27): `up` writes the user's `--env` values into the session
 * user's files once the container is ready (container/user-env.ts, as that user; never through the root entrypoint),
 * and, where MPS is planned, passes GPU_COSPLAY_MPS_THREAD_PCT / _PINNED_MEM_LIMIT_MIB and CUDA_MPS_PIPE_DIRECTORY /
 * CUDA_MPS_LOG_DIRECTORY; `up --json` has `mps`.
 */
import {chmodSync, chownSync, mkdirSync, statSync} from 'node:fs'
import {jest} from '@jest/globals'
import {dirname, join} from 'node:path'

import {BASE_IMAGE, containersOf, docker, UID, UID2, USER, USER2, World} from './support.js'

jest.setTimeout(600_000)

// Every character a shell could act on; each must arrive as typed.
const TRICKY = `it's "quoted" $HOME \${PATH} \`id -u\` $(id -u) back\\slash ; # & | * ~ end`
const MULTILINE = `first line\nsecond 'line' $HOME\nINJECTED=1`

let world: World
let mate: World
let ws2: string
const names = {a: '', b: ''}
let upA: any
let upB: any
let before: unknown

beforeAll(() => {
  world = new World()
  mate = world.as(USER2)
  // one shared state directory, as an admin sets up /var/lib/gpu-cosplay: root's, 1777
  chownSync(world.stateDir, 0, 0)
  chmodSync(world.stateDir, 0o1777)
  // both users read the simulated GPU without sudo; the simulator replaces its state file next to itself
  chmodSync(dirname(world.simState), 0o777)
  ws2 = join(world.home, 'ws2')
  mkdirSync(ws2)
  chownSync(ws2, UID2, UID2)
  names.a = `${world.id}a`
  names.b = `${world.id}b`
  before = world.gpuState()
  // the default image from this tree's docker/ and runtime-hooks/ (an older one may be cached under the same tag)
  const built = world.json(['build', '--base', BASE_IMAGE])
  if (built.exitCode !== 0) throw new Error(`build: ${built.stdout}${built.stderr}`)
})
afterAll(() => world.cleanup())

const envFlags = ['--env', `TRICKY=${TRICKY}`, '--env', `MULTILINE=${MULTILINE}`, '--env', 'HF_HOME=/data/hf', '--env', `GPU_COSPLAY_E2E_TRICKY=${TRICKY}`]

// One scene in steps, each its own test so that a failure names the step; a step needs the ones before it.
describe('two users on one GPU, one shared state directory', () => {
  it('both bring up a container session', () => {
    upA = world.json(['up', '3090', '--name', names.a, '--workspace', world.workspace, ...envFlags])
    expect({exit: upA.exitCode, error: upA.json.error}).toEqual({exit: 0, error: undefined})
    upB = mate.json(['up', '3090', '--name', names.b, '--workspace', ws2, ...envFlags])
    expect({exit: upB.exitCode, error: upB.json.error}).toEqual({exit: 0, error: undefined})
    expect(upA.json.container.user).toBe(USER)
    expect(upB.json.container.user).toBe(USER2)
    expect(containersOf(world.id)).toHaveLength(2)
    expect(upA.json.mig.uuid).not.toBe(upB.json.mig.uuid)
  })

  it("keeps users/ shared and each user's folder private", () => {
    const users = join(world.stateDir, 'users')
    expect(statSync(users).mode & 0o7777).toBe(0o1777)
    for (const uid of [UID, UID2]) {
      const own = join(users, String(uid))
      expect({uid: statSync(own).uid, mode: statSync(own).mode & 0o777}).toEqual({uid, mode: 0o700})
    }
  })

  it('each reaches their own over ssh', () => {
    expect(world.cli(['ssh', names.a, '--', 'id', '-u']).stdout.trim()).toBe(String(UID))
    expect(mate.cli(['ssh', names.b, '--', 'id', '-u']).stdout.trim()).toBe(String(UID2))
  })

  it("neither can end the other's session", () => {
    for (const [who, other] of [
      [mate, names.a],
      [world, names.b],
    ] as const) {
      const down = who.json(['down', other])
      expect({exit: down.exitCode, code: down.json.error?.code}).toEqual({exit: 4, code: 'NOT_OWNER'})
    }
    expect(containersOf(world.id)).toHaveLength(2)
  })

  it("a lease hold is its holder's user's: the teammate cannot release it, nor take it over", () => {
    const lease = ['--host-gpu', '0', '--holder', `${world.id}-job`]
    const held = world.json(['lease', 'hold', ...lease, '--power-limit-w', '400'])
    expect({exit: held.exitCode, error: held.json.error}).toEqual({exit: 0, error: undefined})
    for (const args of [
      ['lease', 'release', ...lease],
      ['lease', 'hold', ...lease, '--power-limit-w', '400'],
    ]) {
      const refused = mate.json(args)
      expect({args, exit: refused.exitCode, code: refused.json.error?.code}).toEqual({args, exit: 4, code: 'NOT_OWNER'})
    }
    expect(world.json(['lease', 'release', ...lease]).exitCode).toBe(0)
  })

  it('a GPU_COSPLAY_* --env value arrives literally over ssh', () => {
    expect(world.cli(['ssh', names.a, '--', 'printenv', 'GPU_COSPLAY_E2E_TRICKY']).stdout).toBe(`${TRICKY}\n`)
  })

  it('any --env value arrives literally over ssh and in a login shell, newlines too', () => {
    // needs `up` to write them as the session user (container/user-env.ts)
    expect(world.cli(['ssh', names.a, '--', 'printenv', 'TRICKY']).stdout).toBe(`${TRICKY}\n`)
    expect(world.cli(['ssh', names.a, '--', 'printenv', 'HF_HOME']).stdout).toBe('/data/hf\n')
    expect(mate.cli(['ssh', names.b, '--', 'printenv', 'MULTILINE']).stdout).toBe(`${MULTILINE}\n`)
    expect(mate.cli(['ssh', names.b, '--', 'printenv', 'INJECTED']).exitCode).toBe(1)
    expect(world.cli(['ssh', names.a, '--', 'bash -lc "printenv TRICKY"']).stdout).toBe(`${TRICKY}\n`)
  })

  it('runs an MPS control daemon in each container, as its user, with the planned limits', () => {
    for (const [who, name, up, uid] of [
      [world, names.a, upA, UID],
      [mate, names.b, upB, UID2],
    ] as const) {
      expect(up.json.mps).toEqual(expect.objectContaining({activeThreadPercentage: expect.any(Number), pinnedMemLimitMiB: expect.any(Number)}))
      const id = up.json.container.id
      expect(docker(['exec', id, 'cat', '/run/gpu-cosplay/mps/status']).trim()).toBe('running')
      expect(docker(['exec', id, 'stat', '-c', '%u %a', '/run/gpu-cosplay/mps/pipe']).trim()).toBe(`${uid} 700`)
      const pct = who.cli(['ssh', name, '--', 'echo get_default_active_thread_percentage | nvidia-cuda-mps-control'])
      expect(Number(pct.stdout.trim())).toBe(up.json.mps.activeThreadPercentage)
      expect(who.cli(['ssh', name, '--', 'printenv', 'CUDA_MPS_PIPE_DIRECTORY']).stdout).toBe('/run/gpu-cosplay/mps/pipe\n')
    }
  })

  it('each takes theirs down; the GPU ends as it was found', () => {
    expect(world.json(['down', names.a]).exitCode).toBe(0)
    expect(containersOf(world.id)).toHaveLength(1)
    expect(mate.cli(['ssh', names.b, '--', 'id', '-u']).stdout.trim()).toBe(String(UID2))
    expect(mate.json(['down', names.b]).exitCode).toBe(0)
    expect(containersOf(world.id)).toEqual([])
    expect(world.gpuState()).toEqual(before)
    expect(world.leftovers()).toEqual({sessions: [], leases: []})
  })
})
