/**
 * Mount sources pinned to what the check saw (issue 27, item 2), with real O_PATH walks and real bind mounts: the
 * tests run as root (mount(8) needs it) and check as `nobody`. A path is swapped for a link at every point between the
 * caller's own resolution and what the container binds; each time, what is mounted is what was checked, or the up is
 * refused.
 */
import {spawn, spawnSync} from 'node:child_process'
import {chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {mountPoints} from '../../../src/container/bind-mount.js'
import {resolveMountsAsCaller} from '../../../src/container/caller-files.js'
import {pinMounts, type PinnedMounts, type WalkHooks} from '../../../src/container/pin-mounts.js'
import {containerSpecFor} from '../../../src/container/session-container.js'
import {type StageMountsLive, stageMountsStep} from '../../../src/container/stage-mounts-step.js'
import {stagingDirOf} from '../../../src/core/state-layout.js'
import {LocalExecutor} from '../../../src/core/local-executor.js'
import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {hostModel, target} from '../plan/catalog-for-tests.js'

const NOBODY = {uid: 65534, gid: 65534, user: 'nobody', groups: []}
const canRun =
  process.getuid?.() === 0 &&
  spawnSync('sh', ['-c', 'command -v setpriv && command -v mount && getent passwd 65534']).status === 0 &&
  existsSync('/proc/self/fd')
const maybe = canRun ? it : it.skip
const executor = new LocalExecutor()
const step = stageMountsStep(() => executor)

let base: string
let ws: string
let stateDir: string
let pinned: PinnedMounts | null = null
let staged: StageMountsLive | null = null

beforeEach(() => {
  base = mkdtempSync('/tmp/gc-pin-')
  chmodSync(base, 0o755)
  mkdirSync(join(base, 'home'), {mode: 0o755})
  const u = join(base, 'home', 'u')
  mkdirSync(u, {mode: 0o700})
  chownSync(u, NOBODY.uid, NOBODY.gid)
  ws = join(u, 'ws')
  mkdirSync(ws, {mode: 0o755})
  writeFileSync(join(ws, 'mine'), 'mine\n')
  chownSync(ws, NOBODY.uid, NOBODY.gid)
  // what a member must never get mounted: root's, unreadable to them, with the same shape
  mkdirSync(join(base, 'secret', 'ws'), {recursive: true, mode: 0o700})
  writeFileSync(join(base, 'secret', 'ws', 'root-only'), 'root only\n', {mode: 0o600})
  stateDir = join(base, 'state')
  mkdirSync(stateDir, {mode: 0o755})
})

afterEach(async () => {
  if (staged) await step.undo({} as never, {kind: 'stage-mounts', state: 'done', params: staged, prior: {}, result: null} as never)
  staged = null
  pinned?.close()
  pinned = null
  // never rm -r across a mount a failed test left: those are the test's own folders, unmounted first
  for (const point of mountPoints().filter((p) => p.startsWith(`${base}/`))) spawnSync('umount', ['-l', point])
  rmSync(base, {recursive: true, force: true})
})

async function stage(session = 's1'): Promise<StageMountsLive> {
  const sources = [
    {name: 'workspace', source: pinned!.workspace, readOnly: false},
    ...pinned!.volumes.map((v, i) => ({name: `volume-${i}`, source: v.source, readOnly: v.readOnly})),
  ]
  const live = {
    dir: stagingDirOf(stateDir, session),
    entries: sources.map((s) => ({name: s.name, source: s.source.path, kind: s.source.kind, readOnly: s.readOnly, dev: s.source.dev, ino: s.source.ino})),
    fds: Object.fromEntries(sources.map((s) => [s.name, s.source.fd])),
  }
  await step.apply({} as never, live, {})
  staged = live
  return live
}

const pin = async (request: Parameters<typeof pinMounts>[0], hooks?: WalkHooks) => (pinned = await pinMounts(request, NOBODY, {executor, hooks}))

describe('the walk', () => {
  maybe("pins a folder of the caller's, and the staging bind is that folder: read-only where asked, root's folder around it", async () => {
    mkdirSync(join(ws, 'data'))
    chownSync(join(ws, 'data'), NOBODY.uid, NOBODY.gid)
    await pin({workspace: ws, volumes: [{source: join(ws, 'data'), target: '/data', readOnly: true}]})
    const live = await stage()
    const at = (name: string) => join(live.dir, name)
    expect(statSync(at('workspace')).ino).toBe(statSync(ws).ino)
    expect(readdirSync(at('workspace'))).toContain('mine')
    expect(spawnSync('touch', [join(at('volume-0'), 'x')]).status).not.toBe(0)
    expect(statSync(join(stateDir, 'mounts')).mode & 0o777).toBe(0o700)
    expect(statSync(join(stateDir, 'mounts')).uid).toBe(0)
  })

  maybe.each([
    ['a link in the middle of the path', () => (symlinkSync(join(base, 'home', 'u'), join(base, 'home', 'link')), join(base, 'home', 'link', 'ws'))],
    ['a link as the last component', () => (symlinkSync(ws, join(base, 'home', 'u', 'ws-link')), join(base, 'home', 'u', 'ws-link'))],
    ['a ".." in the path', () => `${ws}/../ws`],
    ['a folder the caller cannot reach', () => join(base, 'secret', 'ws')],
    ['a path that does not exist', () => join(base, 'home', 'u', 'nope')],
  ])('refuses %s (MOUNT_NOT_ALLOWED, exit 4)', async (_what, path) => {
    await expect(pin({workspace: path(), volumes: []})).rejects.toMatchObject({code: 'MOUNT_NOT_ALLOWED', exit: 4})
  })

  maybe('refuses a read-write mount of what the caller may only read, and a file root keeps private even read-only', async () => {
    await expect(pin({workspace: ws, volumes: [{source: '/usr/share', target: '/x', readOnly: false}]})).rejects.toMatchObject({code: 'MOUNT_NOT_ALLOWED'})
    await expect(pin({workspace: ws, volumes: [{source: join(base, 'secret', 'ws', 'root-only'), target: '/x', readOnly: true}]})).rejects.toMatchObject({
      code: 'MOUNT_NOT_ALLOWED',
    })
    await expect(pin({workspace: ws, volumes: [{source: 'shared-vol', target: '/x', readOnly: false}]})).rejects.toMatchObject({code: 'BAD_VOLUME', exit: 4})
  })

  maybe('takes the groups into account: a group-writable folder of a group the caller is in', async () => {
    const shared = join(base, 'shared')
    mkdirSync(shared)
    chmodSync(shared, 0o770)
    chownSync(shared, 0, 4242)
    const member = {...NOBODY, groups: [4242]}
    pinned = await pinMounts({workspace: shared, volumes: []}, member, {executor})
    expect(pinned.workspace.ino).toBe(statSync(shared).ino)
    await expect(pinMounts({workspace: shared, volumes: []}, NOBODY, {executor})).rejects.toMatchObject({code: 'MOUNT_NOT_ALLOWED'})
  })
})

/** The two swaps a member can make: the folder itself for a link, or a folder on the way (their home) for one. */
const SWAPS = {
  'the workspace for a link': () => {
    renameSync(ws, `${ws}.moved`)
    symlinkSync(join(base, 'secret', 'ws'), ws)
  },
  'a folder on the way for a link': () => {
    const u = join(base, 'home', 'u')
    renameSync(u, `${u}.moved`)
    symlinkSync(join(base, 'secret'), u)
  },
} as const

/** Where the swap can happen: after the caller's resolution, before each component the walk opens, after the walk, after the staging. */
const POINTS = [
  'after the caller resolved it',
  'before component 1',
  'before component 2',
  'before component 3',
  'before component 4',
  'before component 5',
  'after the walk',
  'after the staging',
] as const

describe('a path swapped for a link at every point between the check and the container start', () => {
  const cases = POINTS.flatMap((point) => Object.keys(SWAPS).map((swap) => [point, swap] as const))

  maybe.each(cases)('%s, %s: what is mounted is what was checked, or the up is refused', async (point, swap) => {
    const original = statSync(ws).ino
    const swapNow = SWAPS[swap as keyof typeof SWAPS]
    const resolved = await resolveMountsAsCaller({workspace: ws, volumes: []}, NOBODY, executor)
    if (point === 'after the caller resolved it') swapNow()
    const depth = point.startsWith('before component') ? Number(point.split(' ')[2]) : null
    // the walk's components: /tmp, gc-pin-x, home, u, ws
    expect(resolved.workspace.split('/').filter(Boolean)).toHaveLength(5)
    const hooks: WalkHooks = {beforeComponent: (_sofar, index) => index + 1 === depth && swapNow()}
    let refusedWith: unknown = null
    await pin({workspace: resolved.workspace, volumes: []}, hooks).catch((error: unknown) => (refusedWith = error))
    if (refusedWith) {
      expect(refusedWith).toMatchObject({code: 'MOUNT_NOT_ALLOWED', exit: 4})
      return
    }
    if (point === 'after the walk') swapNow()
    const live = await stage()
    if (point === 'after the staging') swapNow()
    // what the container gets: the staging path, never the member's
    const spec = containerSpecFor(sessionFor('s1'), {index: 0, uuid: 'GPU-1', memoryTotalMiB: 143771} as never, optionsFor(pinned!))
    expect(spec.binds).toEqual([`${live.dir}/workspace:/workspace`])
    const bound = join(live.dir, 'workspace')
    expect(statSync(bound).ino).toBe(original)
    expect(readdirSync(bound)).toEqual(['mine'])
  })
})

describe("the staging step's undo", () => {
  maybe('unmounts and removes everything, and again does nothing (recover after undo, or after a crash before the bind)', async () => {
    await pin({workspace: ws, volumes: [{source: ws, target: '/again', readOnly: true}]})
    const live = await stage('s2')
    const entry = {kind: 'stage-mounts', state: 'intended', params: {dir: live.dir, entries: live.entries}, prior: {}, result: null} as never
    await step.undo({} as never, entry)
    staged = null
    expect(mountPoints().filter((p) => p.startsWith(live.dir))).toEqual([])
    expect(existsSync(live.dir)).toBe(false)
    await step.undo({} as never, entry)
    // the member's folder is as it was
    expect(readdirSync(ws)).toEqual(['mine'])
    expect(statSync(ws).uid).toBe(NOBODY.uid)
  })

  maybe('acts only on a staging folder of its own shape', async () => {
    const entry = {kind: 'stage-mounts', state: 'done', params: {dir: ws, entries: [{name: 'mine'}]}, prior: {}, result: null} as never
    await expect(step.undo({} as never, entry)).rejects.toMatchObject({code: 'BAD_JOURNAL'})
    expect(readdirSync(ws)).toEqual(['mine'])
  })
})

function sessionFor(name: string) {
  const plan = planCosplay(target('t4'), planHostFromModel(hostModel('h200')))
  return {name, owner: {uid: NOBODY.uid, user: 'nobody'}, target: {key: 't4', name: 'Tesla T4'}, plan, mig: {uuid: 'MIG-1'}} as never
}

function optionsFor(p: PinnedMounts) {
  return {
    image: {id: 'sha256:img', isCosplayImage: true, env: {}},
    imageRef: 'img',
    privileges: {sudo: false, unprivileged: false, user: null, capDrop: ['ALL'], capAdd: [], noNewPrivileges: true, env: {}},
    owner: {uid: NOBODY.uid, gid: NOBODY.gid, user: 'nobody'},
    authorizedKeys: [],
    workspace: p.workspace.path,
    volumes: [],
    pinned: p,
    env: {},
    stateDir,
    privateOwner: null,
    sshPort: null,
    sshBind: '127.0.0.1',
    shmSizeBytes: null,
    hasTf32: false,
    packageRoot: '/pkg',
  } as never
}

describe('a kill -9 with a staged mount', () => {
  afterAll(async () => (await import('../../cli/support/run-cli.js')).cleanupTemps())

  maybe(
    'leaves a journal that recover undoes: nothing mounted or staged, the GPU as it was',
    async () => {
      const {build} = await import('esbuild')
      const {simBox, gpuPicture} = await import('../apply/sim-deps.js')
      const {SIM_BIN} = await import('../../cli/support/run-cli.js')
      const {recoverAll} = await import('../../../src/apply/recover.js')
      const box = simBox()
      const before = gpuPicture(box.sim)
      // bundled into the checkout's own tmp/ (git ignores it), so that its packages resolve from node_modules
      mkdirSync(join(process.cwd(), 'tmp'), {recursive: true})
      const child = join(process.cwd(), 'tmp', `stage-then-hang-${process.pid}.mjs`)
      await build({
        entryPoints: [join(process.cwd(), 'test/unit/container/support/stage-then-hang.ts')],
        outfile: child,
        bundle: true,
        packages: 'external',
        format: 'esm',
        platform: 'node',
        target: 'node20',
        logLevel: 'error',
      })
      try {
        const running = spawn(process.execPath, [child, box.sim.statePath, box.stateDir, ws, 'crashed', SIM_BIN], {stdio: ['ignore', 'pipe', 'pipe']})
        let stderr = ''
        running.stderr.on('data', (d) => (stderr += d))
        const exited = new Promise<void>((resolve) => running.on('exit', () => resolve()))
        // the line it prints once the bind is made, or its exit (then the test fails with its stderr)
        await new Promise<void>((resolve, reject) => {
          running.stdout.on('data', (d: Buffer) => d.toString().includes('staged') && resolve())
          void exited.then(() => reject(new Error(`the child exited before staging: ${stderr}`)))
        })
        running.kill('SIGKILL')
        await exited
        const dir = stagingDirOf(box.stateDir, 'crashed')
        expect(mountPoints()).toContain(join(dir, 'workspace'))
        const recovered = await recoverAll(box.deps)
        expect(recovered.gpus.flatMap((g) => g.recovered)).toEqual(['crashed'])
        expect(mountPoints().filter((p) => p.startsWith(dir))).toEqual([])
        expect(existsSync(dir)).toBe(false)
        expect(gpuPicture(box.sim)).toEqual(before)
        expect(readdirSync(ws)).toEqual(['mine'])
      } finally {
        rmSync(child, {force: true})
        rmSync(`${child}.map`, {force: true})
      }
    },
    60_000,
  )
})
