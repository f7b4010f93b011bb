/**
 * Issue 27, written as the attacker: a member of the box's group (B, gcshare-b), in neither the docker group nor
 * sudoers, on a box set up with `system install`, against a teammate (A, gcshare-a) whose session is up. B tries every
 * attack of the issue (1-7 and the review's list) three ways:
 *
 * - through gpu-cosplay, as B types it;
 * - straight to the engine with today's argv (`sudo -n ENGINE ARGV...`, which the sudo rule allows);
 * - straight to the engine with the v1 protocol (/work/notes/protocol.md: no argv, one JSON request on stdin).
 *
 * Each test asserts the safe outcome: the attack fails with a clear error (the exit code, and the error code where the
 * protocol or the issue names one), and the box's set-up (config.yaml, the sudoers rule, the entry point), the
 * teammate's session and files, and the GPU stay exactly as they were (Watch.changesSince: an empty list). Races are
 * set up by synchronisation (a queue entry, a file), never won by a sleep.
 */
import {spawnSync} from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'

import {jest} from '@jest/globals'

import {
  answered,
  ANSWERED,
  answerOf,
  buildPreload,
  cliVerdict,
  containerRequest,
  descendants,
  downAsRoot,
  ENGINE,
  fillGpu,
  rootSshView,
  jsonOf,
  listening,
  manifest,
  noteWhoRuns,
  openRequest,
  PIPE_FILLER,
  plantDir,
  plantFile,
  plantLink,
  plantWrappers,
  procInfo,
  procState,
  PTY_SUSPENDER,
  queuedOrDone,
  REFUSED,
  request,
  restoreBoxFiles,
  rootRan,
  saveBoxFiles,
  sessionNames,
  settle,
  setuidRoot,
  track,
  until,
  uidRecorder,
  upRequest,
  verdict,
  Watch,
  type Answer,
} from './attack-kit.js'
import {type Background, CLI, MEMBERS, SharedBox} from './shared-box.js'
import {BASE_IMAGE, docker, type Result} from './support.js'

jest.setTimeout(1_800_000)

const box = new SharedBox()
const ID = box.id
const A = 'a' as const
const B = 'b' as const
const userA = MEMBERS.a.user
const userB = MEMBERS.b.user
const uidB = MEMBERS.b.uid
const homeA = box.home(userA)
const homeB = box.home(userB)
/** the teammate's session: up for the whole suite, never to be touched */
const teammate = `${userA}-${ID}`
/** B's session names start with B's own user name (a name starting with another member's is reserved) */
const nameB = (tag: string) => `${userB}-${ID}-${tag}`
/** root's scratch: the pipe filler, the LD_PRELOAD library (0755: members read and run them) */
const KIT = `/tmp/gcattack-${ID}`
/** root-owned things a member must not change: a file behind a planted link, empty folders to swap in */
const ROOTS = `/var/lib/gcattack-${ID}`
const VICTIM = path.join(ROOTS, 'victim.conf')
const VICTIM_TEXT = 'the victim keeps this line\n'
/** root-only files (in /root, which a member cannot even look into) */
const ROOT_ONLY = `/root/gcattack-${ID}`
const SECRET = `teammate-token-${Math.random().toString(36).slice(2)}`
const FILLER = path.join(KIT, 'pipe-filler.py')
const SUSPENDER = path.join(KIT, 'pty-suspender.py')
const SAFE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'

let watch: Watch
let savedBox: ReturnType<typeof saveBoxFiles>
let preloadLib: string
let pubB: string
let rootSshExisted: boolean
/** root's ssh config as it was (null: none), and whether the suite made root a key */
let rootSshConfig: Buffer | null
let madeRootKey = false

beforeAll(() => {
  box.setUp()
  const built = box.root(['build', '--base', BASE_IMAGE, '--json'])
  if (built.exitCode !== 0) throw new Error(`build: ${built.stdout}${built.stderr}`)
  savedBox = saveBoxFiles()
  rootSshExisted = fs.existsSync('/root/.ssh')
  rootSshConfig = fs.existsSync('/root/.ssh/config') ? fs.readFileSync('/root/.ssh/config') : null
  for (const dir of [KIT, ROOTS]) {
    fs.rmSync(dir, {recursive: true, force: true})
    fs.mkdirSync(dir, {mode: 0o755})
    fs.chmodSync(dir, 0o755)
  }
  fs.writeFileSync(FILLER, PIPE_FILLER, {mode: 0o755})
  fs.writeFileSync(SUSPENDER, PTY_SUSPENDER, {mode: 0o755})
  preloadLib = buildPreload(KIT)
  fs.writeFileSync(VICTIM, VICTIM_TEXT, {mode: 0o644})
  fs.rmSync(ROOT_ONLY, {recursive: true, force: true})
  fs.mkdirSync(ROOT_ONLY, {mode: 0o700})
  const fitLine = {
    pid: 4242,
    argv: ['python', 'train.py', '--token', SECRET],
    t: 1_700_000_000,
    name: 'tesla_t4',
    peakReservedBytes: 1,
    peakAllocatedBytes: 1,
    capBytes: 2,
  }
  fs.writeFileSync(path.join(ROOT_ONLY, 'fit.jsonl'), `${JSON.stringify(fitLine)}\n`, {mode: 0o600})
  fs.writeFileSync(path.join(ROOT_ONLY, 'other.txt'), 'one\ntwo\nthree\n', {mode: 0o600})

  // the teammate: files of their own, and a session with a container
  plantFile(A, path.join(homeA, 'secret.txt'), `${SECRET}\n`, 0o600)
  plantFile(A, path.join(homeA, 'ws', 'notes.txt'), 'the teammate works here\n')
  const up = box.json(A, ['up', '3090', '--name', teammate, '--workspace', path.join(homeA, 'ws')])
  if (up.exitCode !== 0) throw new Error(`the teammate's up: ${up.stdout}${up.stderr}`)
  // the attacker: an ssh key of their own
  plantDir(B, path.join(homeB, '.ssh'), 0o700)
  const key = box.as(B, ['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-f', path.join(homeB, '.ssh', 'id_ed25519')])
  if (key.exitCode !== 0) throw new Error(`ssh-keygen: ${key.stderr}`)
  pubB = fs.readFileSync(path.join(homeB, '.ssh', 'id_ed25519.pub'), 'utf8').trim()
  watch = new Watch(box, {member: A, session: teammate}, B)
})

afterEach(async () => {
  await settle(box, [teammate])
  restoreBoxFiles(savedBox)
  fs.rmSync(VICTIM, {force: true})
  fs.writeFileSync(VICTIM, VICTIM_TEXT, {mode: 0o644})
  for (const name of fs.readdirSync('/etc')) if (name.includes('gcattack')) fs.rmSync(path.join('/etc', name), {force: true, recursive: true})
  restoreRootSsh()
  // each test's folders of B's (t...), with whatever root left in them: setuid copies of the shell included
  for (const name of fs.readdirSync(homeB)) if (name.startsWith('t')) fs.rmSync(path.join(homeB, name), {recursive: true, force: true})
  for (const name of fs.readdirSync(ROOTS)) if (name.startsWith('empty-')) fs.rmSync(path.join(ROOTS, name), {recursive: true, force: true})
})

afterAll(async () => {
  await settle(box, [teammate]).catch(() => undefined)
  restoreBoxFiles(savedBox)
  box.tearDown()
  for (const dir of [KIT, ROOTS, ROOT_ONLY]) fs.rmSync(dir, {recursive: true, force: true})
})

/**
 * Root's ~/.ssh as the suite found it: its config put back, the key the suite made and whatever names this suite's
 * sessions removed (root's own sessions of other suites keep their known_hosts there), folders removed that were not there.
 */
function restoreRootSsh(): void {
  const config = '/root/.ssh/config'
  if (rootSshConfig === null) fs.rmSync(config, {force: true})
  else if (!fs.existsSync(config) || !fs.readFileSync(config).equals(rootSshConfig)) fs.writeFileSync(config, rootSshConfig, {mode: 0o600})
  if (madeRootKey) for (const f of ['id_ed25519', 'id_ed25519.pub']) fs.rmSync(path.join('/root/.ssh', f), {force: true})
  madeRootKey = false
  for (const dir of ['/root/.ssh', '/root/.ssh/gpu-cosplay']) {
    if (!fs.existsSync(dir)) continue
    for (const name of fs.readdirSync(dir)) if (name.includes(ID)) fs.rmSync(path.join(dir, name), {force: true, recursive: true})
  }
  if (!rootSshExisted) {
    for (const dir of ['/root/.ssh/gpu-cosplay', '/root/.ssh']) if (fs.existsSync(dir) && fs.readdirSync(dir).length === 0) fs.rmdirSync(dir)
  }
}

/** what a test compares at its end: its outcome, and the box as it was (settled first: B's sessions down, waiters gone) */
async function finish<T>(outcome: T, before: ReturnType<Watch['take']>): Promise<T & {box: string[]}> {
  await settle(box, [teammate])
  return {...outcome, box: watch.changesSince(before)}
}

/** `sudo -n ENGINE argv...` as B, read as protocol frames */
const engineArgv = (argv: readonly string[], input?: string): Answer => answerOf(box.engine(B, argv, input))
const ENGINE_ARGV = REFUSED(2, 'ENGINE_ARGV')
const BAD_REQUEST = REFUSED(2, 'BAD_REQUEST')

/** a folder of B's with a workspace armed for attack 3: wrappers, a script to source, a preload library, an out/ root could write */
function armed(tag: string) {
  const dir = plantDir(B, path.join(homeB, tag))
  const ws = plantDir(B, path.join(dir, 'ws'))
  const out = plantDir(B, path.join(ws, 'out'), 0o777)
  plantWrappers(B, path.join(ws, 'evil'), '/workspace/out')
  plantFile(B, path.join(ws, 'x.sh'), `#!/bin/sh\n${noteWhoRuns('/workspace/out', 'sourced')}\n`, 0o755)
  plantFile(B, path.join(ws, 'planted.so'), fs.readFileSync(preloadLib), 0o755)
  const entry = plantFile(B, path.join(dir, 'entrypoint.sh'), `#!/bin/sh\n${noteWhoRuns('/workspace/out', 'entrypoint')}\nexit 1\n`, 0o755)
  return {dir, ws, out, entry}
}

/** B's `up t4` of a container session, as B types it */
const upAsB = (name: string, ws: string, flags: readonly string[] = []): Result =>
  box.cli(B, ['up', 't4', '--name', name, '--workspace', ws, ...flags, '--json'])

function containerOf(session: string): any | null {
  const id = docker(['ps', '-a', '-q', '--filter', `label=io.gpu-cosplay.session=${session}`])
    .trim()
    .split('\n')[0]
  return id ? JSON.parse(docker(['inspect', id]))[0] : null
}

// =====================================================================================================================
describe('1. a member rewrites the box', () => {
  const rewrites = (smi: string) => [
    ['system', 'install', '--allow-container-sudo', '--quota-sessions', 'none', '--yes'],
    ['system:install', '--allow-container-sudo', '--max-ttl', 'none', '--yes'],
    ['system:install', '--nvidia-smi', smi, '--yes'],
    ['system', 'install', '--group', userB, '--yes'],
    ['system:uninstall', '--yes'],
    ['system', 'uninstall', '--yes'],
    ['system:reap'],
  ]

  it('through gpu-cosplay: system install/uninstall/reap, spaced or with a colon, are ROOT_ONLY (exit 4)', async () => {
    const before = watch.take()
    const smi = plantFile(B, path.join(homeB, 't1-cli-smi'), '#!/bin/sh\nid -u > /tmp/gcattack-smi-ran\n', 0o755)
    const seen = rewrites(smi).map((args) => ({args: args.join(' '), ...cliVerdict(box.cli(B, [...args, '--json']))}))
    expect(await finish({seen}, before)).toEqual({seen: rewrites(smi).map((args) => ({args: args.join(' '), exit: 4, code: 'ROOT_ONLY'})), box: []})
  })

  it('straight to the engine with argv: refused as ENGINE_ARGV (exit 2), the box unchanged', async () => {
    const before = watch.take()
    const smi = plantFile(B, path.join(homeB, 't1-argv-smi'), '#!/bin/sh\nid -u > /tmp/gcattack-smi-ran\n', 0o755)
    const tries = [...rewrites(smi), ['--', 'system', 'install', '--allow-container-sudo', '--yes']]
    const seen = tries.map((args) => ({args: args.join(' '), ...verdict(engineArgv([...args, '--json']))}))
    expect(await finish({seen}, before)).toEqual({seen: tries.map((args) => ({args: args.join(' '), ...ENGINE_ARGV})), box: []})
  })

  it('as a request: the engine serves no system operation (BAD_REQUEST, exit 2), the box unchanged', async () => {
    const before = watch.take()
    const requests = [
      {v: 1, op: 'system-install', allowContainerSudo: true, yes: true},
      {v: 1, op: 'system:install', allowContainerSudo: true, yes: true},
      {v: 1, op: 'system', argv: ['install', '--allow-container-sudo', '--yes']},
      {v: 1, op: 'install', config: {allowContainerSudo: true}},
      {v: 1, op: 'system-uninstall'},
      {v: 1, op: 'reap'},
      upRequest({allowContainerSudo: true}),
    ]
    const seen: unknown[] = []
    for (const r of requests) seen.push({op: r.op, ...verdict(await request(box, B, [r], {close: true}))})
    expect(await finish({seen}, before)).toEqual({seen: requests.map((r) => ({op: r.op, ...BAD_REQUEST})), box: []})
  })
})

// =====================================================================================================================
describe('2. root writes a file for the member', () => {
  const plan = ['plan', 't4', '--on', 'h200', '-o', 'slurm']
  const NODE = 'gpu-node\nPartitionName=owned Nodes=ALL'
  const victim = () => ({content: fs.readFileSync(VICTIM, 'utf8'), ...manifestOf(VICTIM)})
  const manifestOf = (file: string) => ({stat: manifest(path.dirname(file))[path.basename(file)]})
  const whose = (file: string) => (fs.existsSync(file) ? (fs.lstatSync(file).uid === uidB ? 'the member' : `uid ${fs.lstatSync(file).uid}`) : 'absent')

  it('through gpu-cosplay: --out (to /etc, through a planted link) and --node with a newline write as the member, or not at all', async () => {
    const before = watch.take()
    const victimBefore = victim()
    const dir = plantDir(B, path.join(homeB, 't2-cli'))
    const link = plantLink(B, path.join(dir, 'plan.conf'), VICTIM)
    const etc = `/etc/gcattack-${ID}-cli.conf`
    const toEtc = box.cli(B, [...plan, '--out', etc])
    box.cli(B, [...plan, '--out', link])
    const node = box.cli(B, [...plan, '--node', NODE, '--out', path.join(dir, 'node.conf')])
    expect(
      await finish(
        {
          toEtc: {refused: toEtc.exitCode !== 0, file: whose(etc)},
          throughLink: {victim: victim()},
          node: {file: whose(path.join(dir, 'node.conf')), exit: node.exitCode},
        },
        before,
      ),
    ).toEqual({
      toEtc: {refused: true, file: 'absent'},
      throughLink: {victim: victimBefore},
      node: {file: expect.stringMatching(/^(the member|absent)$/), exit: expect.any(Number)},
      box: [],
    })
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2); no root-owned file appears, the link target keeps its content', async () => {
    const before = watch.take()
    const victimBefore = victim()
    const dir = plantDir(B, path.join(homeB, 't2-argv'))
    const link = plantLink(B, path.join(dir, 'plan.conf'), VICTIM)
    const etc = `/etc/gcattack-${ID}-argv.conf`
    const etcNode = `/etc/gcattack-${ID}-node.conf`
    const seen = {
      toEtc: verdict(engineArgv([...plan, '--out', etc])),
      throughLink: verdict(engineArgv([...plan, '--out', link])),
      node: verdict(engineArgv([...plan, '--node', NODE, '--out', etcNode])),
    }
    expect(await finish({seen, files: {etc: whose(etc), etcNode: whose(etcNode)}, victim: victim()}, before)).toEqual({
      seen: {toEtc: ENGINE_ARGV, throughLink: ENGINE_ARGV, node: ENGINE_ARGV},
      files: {etc: 'absent', etcNode: 'absent'},
      victim: victimBefore,
      box: [],
    })
  })

  it('as a request: the engine serves no plan or export (BAD_REQUEST, exit 2); no file appears', async () => {
    const before = watch.take()
    const victimBefore = victim()
    const etc = `/etc/gcattack-${ID}-request.conf`
    const requests = [
      {v: 1, op: 'plan', target: 't4', on: 'h200', output: 'slurm', out: etc},
      {v: 1, op: 'export', target: 't4', format: 'slurm', node: NODE, out: etc},
      {v: 1, op: 'write', file: VICTIM, content: 'owned\n'},
      upRequest({out: etc}),
    ]
    const seen: unknown[] = []
    for (const r of requests) seen.push({op: r.op, ...verdict(await request(box, B, [r], {close: true}))})
    expect(await finish({seen, etc: whose(etc), victim: victim()}, before)).toEqual({
      seen: requests.map((r) => ({op: r.op, ...BAD_REQUEST})),
      etc: 'absent',
      victim: victimBefore,
      box: [],
    })
  })
})

// =====================================================================================================================
describe("3. root runs the member's code in their container", () => {
  const ENV_ATTACKS = [
    {tag: 'path', name: 'PATH', value: `/workspace/evil:${SAFE_PATH}`},
    {tag: 'bash-env', name: 'BASH_ENV', value: '/workspace/x.sh'},
    {tag: 'env', name: 'ENV', value: '/workspace/x.sh'},
    {tag: 'ld-preload', name: 'LD_PRELOAD', value: '/workspace/planted.so'},
  ]

  /** what root may act on in the container; each gets a source folder of B's with what a member would put there */
  type TargetAttack = {tag: string; target: string; source: (kit: ReturnType<typeof armed>) => string; ro?: boolean}
  const emptyOf = (kit: ReturnType<typeof armed>, tag: string) => plantDir(B, path.join(kit.dir, `src-${tag}`), 0o777)
  const TARGETS: TargetAttack[] = [
    {tag: 'entrypoint', target: '/opt/gpu-cosplay/entrypoint.sh', source: (k) => k.entry, ro: true},
    {
      tag: 'opt',
      target: '/opt/gpu-cosplay',
      source: (k) => {
        const src = emptyOf(k, 'opt')
        plantFile(B, path.join(src, 'entrypoint.sh'), fs.readFileSync(k.entry), 0o755)
        plantWrappers(B, path.join(src, 'bin'), '/workspace/out')
        return src
      },
    },
    {
      tag: 'opt-bin',
      target: '/opt/gpu-cosplay/bin',
      source: (k) => {
        plantWrappers(B, path.join(k.dir, 'src-opt-bin'), '/workspace/out')
        return path.join(k.dir, 'src-opt-bin')
      },
    },
    {
      tag: 'usr-local-bin',
      target: '/usr/local/bin',
      source: (k) => {
        plantWrappers(B, path.join(k.dir, 'src-usr-local-bin'), '/workspace/out')
        return path.join(k.dir, 'src-usr-local-bin')
      },
    },
    {tag: 'usr', target: '/usr', source: (k) => emptyOf(k, 'usr')},
    {tag: 'etc', target: '/etc', source: (k) => emptyOf(k, 'etc')},
    {tag: 'etc-ssh', target: '/etc/ssh', source: (k) => emptyOf(k, 'etc-ssh')},
    {tag: 'run', target: '/run', source: (k) => emptyOf(k, 'run')},
    {tag: 'var-run', target: '/var/run', source: (k) => emptyOf(k, 'var-run')},
    {tag: 'root', target: '/root', source: (k) => emptyOf(k, 'root')},
    {
      tag: 'home',
      target: `/home/${userB}`,
      source: (k) => {
        // root writes authorized_keys through a link of B's: a root-owned file in the workspace
        const src = emptyOf(k, 'home')
        plantDir(B, path.join(src, '.ssh'), 0o700)
        plantLink(B, path.join(src, '.ssh', 'authorized_keys'), '/workspace/out/planted-authorized-keys')
        return src
      },
    },
    {tag: 'tmp-gpu-cosplay', target: '/tmp/gpu-cosplay', source: (k) => emptyOf(k, 'tmp')},
    {tag: 'dev', target: '/dev', source: (k) => emptyOf(k, 'dev')},
  ]
  const volumeOf = (t: TargetAttack, kit: ReturnType<typeof armed>) => `${t.source(kit)}:${t.target}${t.ro ? ':ro' : ''}`
  const MOUNT_REFUSED = {exit: 4, code: 'VOLUME_TARGET_NOT_ALLOWED'}

  describe('through gpu-cosplay', () => {
    it.each(ENV_ATTACKS)('up --env $name=$value: nothing of the member runs as root, no setuid-root file lands on the host', async ({tag, name, value}) => {
      const before = watch.take()
      const kit = armed(`t3-cli-env-${tag}`)
      const up = upAsB(nameB(`e-${tag}`), kit.ws, ['--env', `${name}=${value}`])
      expect(await finish({up: cliVerdict(up), rootRan: rootRan(kit.out), setuidRoot: setuidRoot(kit.dir)}, before)).toEqual({
        up: expect.anything(), // refused or up: either is safe
        rootRan: [],
        setuidRoot: [],
        box: [],
      })
    })

    it.each(TARGETS)('up --volume SRC:$target is refused (VOLUME_TARGET_NOT_ALLOWED, exit 4); nothing of the member runs as root', async (t) => {
      const before = watch.take()
      const kit = armed(`t3-cli-vol-${t.tag}`)
      const up = upAsB(nameB(`v-${t.tag}`), kit.ws, ['--volume', volumeOf(t, kit)])
      expect(await finish({up: cliVerdict(up), rootRan: rootRan(kit.out), setuidRoot: setuidRoot(kit.dir)}, before)).toEqual({
        up: MOUNT_REFUSED,
        rootRan: [],
        setuidRoot: [],
        box: [],
      })
    })

    it('subfolders of the home, and folders of their own, stay mountable (the control)', async () => {
      const before = watch.take()
      const kit = armed('t3-cli-allowed')
      const data = plantDir(B, path.join(kit.dir, 'data'))
      plantFile(B, path.join(data, 'mine.txt'), 'mine\n')
      const name = nameB('allowed')
      const up = upAsB(name, kit.ws, ['--volume', `${data}:/home/${userB}/data`, '--volume', `${data}:/data:ro`])
      const seen = box.cli(B, ['exec', name, '--', 'sh', '-c', `cat /home/${userB}/data/mine.txt /data/mine.txt`])
      expect(await finish({up: cliVerdict(up), seen: seen.stdout, rootRan: rootRan(kit.out)}, before)).toEqual({
        up: {exit: 0, code: undefined},
        seen: 'mine\nmine\n',
        rootRan: [],
        box: [],
      })
    })
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2); nothing of the member runs as root', async () => {
    const before = watch.take()
    const kit = armed('t3-argv')
    const envs = ENV_ATTACKS.flatMap((e) => ['--env', `${e.name}=${e.value}`])
    const seen = {
      env: verdict(engineArgv(['up', 't4', '--name', nameB('argv-env'), '--workspace', kit.ws, ...envs, '--json'])),
      entrypoint: verdict(
        engineArgv(['up', 't4', '--name', nameB('argv-vol'), '--workspace', kit.ws, '--volume', `${kit.entry}:/opt/gpu-cosplay/entrypoint.sh:ro`, '--json']),
      ),
      varRun: verdict(engineArgv(['up', 't4', '--name', nameB('argv-run'), '--workspace', kit.ws, '--volume', `${emptyOf(kit, 'run')}:/var/run`, '--json'])),
    }
    expect(await finish({seen, rootRan: rootRan(kit.out), setuidRoot: setuidRoot(kit.dir)}, before)).toEqual({
      seen: {env: ENGINE_ARGV, entrypoint: ENGINE_ARGV, varRun: ENGINE_ARGV},
      rootRan: [],
      setuidRoot: [],
      box: [],
    })
  })

  describe('as a request', () => {
    it.each(ENV_ATTACKS)('container.env $name=$value: nothing of the member runs as root', async ({tag, name, value}) => {
      const before = watch.take()
      const kit = armed(`t3-req-env-${tag}`)
      const up = await request(box, B, [upRequest({name: nameB(`re-${tag}`), container: containerRequest(kit.ws, pubB, {env: [{name, value}]})})])
      expect(await finish({up: answered(up), rootRan: rootRan(kit.out), setuidRoot: setuidRoot(kit.dir)}, before)).toEqual({
        up: ANSWERED, // served or refused: either is safe
        rootRan: [],
        setuidRoot: [],
        box: [],
      })
    })

    const SOME = TARGETS.filter((t) => ['entrypoint', 'opt-bin', 'var-run', 'home', 'tmp-gpu-cosplay', 'etc', 'dev'].includes(t.tag))
    it.each(SOME)('container.volumes target $target: VOLUME_TARGET_NOT_ALLOWED (exit 4)', async (t) => {
      const before = watch.take()
      const kit = armed(`t3-req-vol-${t.tag}`)
      const volume = {source: t.source(kit), target: t.target, readOnly: t.ro ?? false}
      const up = await request(box, B, [upRequest({name: nameB(`rv-${t.tag}`), container: containerRequest(kit.ws, pubB, {volumes: [volume]})})])
      expect(await finish({up: verdict(up), rootRan: rootRan(kit.out), setuidRoot: setuidRoot(kit.dir)}, before)).toEqual({
        up: REFUSED(4, 'VOLUME_TARGET_NOT_ALLOWED'),
        rootRan: [],
        setuidRoot: [],
        box: [],
      })
    })

    it('targets spelled to slip past a check (.., //, a trailing slash, relative) are refused (exit 2 or 4)', async () => {
      const before = watch.take()
      const kit = armed('t3-req-spelled')
      const src = emptyOf(kit, 'spelled')
      const spellings = ['/data/../etc', '//etc', '/usr/local/bin/', '/opt/gpu-cosplay/./bin', 'etc', '/home/gcshare-b/.', '/var/run/../run']
      const seen: unknown[] = []
      for (const target of spellings) {
        const a = await request(box, B, [
          upRequest({name: nameB('spelled'), container: containerRequest(kit.ws, pubB, {volumes: [{source: src, target, readOnly: false}]})}),
        ])
        seen.push({target, refused: (a.exitCode === 2 || a.exitCode === 4) && a.error?.exit === a.exitCode && !a.result})
      }
      expect(await finish({seen, rootRan: rootRan(kit.out)}, before)).toEqual({
        seen: spellings.map((target) => ({target, refused: true})),
        rootRan: [],
        box: [],
      })
    })
  })
})

// =====================================================================================================================
describe('4. mounts swapped while up --wait waits', () => {
  type Form = 'cli' | 'argv' | 'request'
  const waitUp = (form: Form, name: string, ws: string, vol: string): {bg: Background; answer: () => Promise<unknown>} => {
    const flags = ['up', 't4', '--name', name, '--wait', '--timeout', '10m', '--workspace', ws, '--volume', `${vol}:/data`, '--json']
    if (form === 'cli') {
      const bg = track(box.start(B, [CLI, ...flags]))
      return {bg, answer: async () => cliVerdict(await bg.done)}
    }
    if (form === 'argv') {
      const bg = track(box.start(B, ['/usr/bin/sudo', '-n', ENGINE, ...flags]))
      return {bg, answer: async () => verdict(answerOf(await bg.done))}
    }
    const req = openRequest(box, B, [
      upRequest({name, wait: true, timeoutMs: 600_000, container: containerRequest(ws, pubB, {volumes: [{source: vol, target: '/data', readOnly: false}]})}),
    ])
    return {bg: req.bg, answer: async () => answered(await req.answer)}
  }
  /** the attack is set up (queued) where the up is served; the argv form is refused at once */
  const EXPECTED: Record<Form, {state: string; outcome: unknown}> = {
    cli: {state: 'queued', outcome: expect.anything()},
    argv: {state: 'done', outcome: ENGINE_ARGV},
    request: {state: 'queued', outcome: ANSWERED},
  }

  it.each(['cli', 'argv', 'request'] as Form[])(
    "%s: the workspace swapped for a root folder and the volume for the teammate's home after the check bind neither",
    async (form) => {
      const before = watch.take()
      const dir = plantDir(B, path.join(homeB, `t4-${form}`))
      const ws = plantDir(B, path.join(dir, 'ws'))
      plantFile(B, path.join(ws, 'mine.txt'), 'workspace\n')
      const vol = plantDir(B, path.join(dir, 'vol'))
      plantFile(B, path.join(vol, 'mine.txt'), 'volume\n')
      const empty = path.join(ROOTS, `empty-${form}`)
      fs.mkdirSync(empty, {mode: 0o755})
      const fillers = fillGpu(box, `${ID}${form}`)
      const name = nameB(`swap-${form}`)
      const up = waitUp(form, name, ws, vol)
      const state = await queuedOrDone(box, userB, up.bg)
      if (state === 'queued') {
        // checked and queued: now B swaps both for links, and a slice frees
        const swap = box.as(B, ['sh', '-c', `mv ${ws} ${ws}.checked && ln -s ${empty} ${ws} && mv ${vol} ${vol}.checked && ln -s ${homeA} ${vol}`])
        if (swap.exitCode !== 0) throw new Error(`swap: ${swap.stderr}`)
        downAsRoot(box, fillers.slice(0, 1))
      }
      const outcome = await up.answer()
      // what the container bound, by inode (a bind mount keeps the host's device and inode)
      const inodes: Record<string, string> = {
        [String(fs.statSync(empty).ino)]: 'the root folder',
        [String(fs.statSync(homeA).ino)]: "the teammate's home",
      }
      for (const checked of [`${ws}.checked`, `${vol}.checked`, ws, vol])
        if (fs.existsSync(checked) && !fs.lstatSync(checked).isSymbolicLink()) inodes[String(fs.statSync(checked).ino)] = 'what was checked'
      const c = containerOf(name)
      let bound: unknown = 'no container'
      if (c && !c.State?.Running) bound = 'a container that does not run'
      if (c?.State?.Running) {
        const out = docker(['exec', c.Id, 'stat', '-c', '%i', '/workspace', '/data'], undefined, {allowFail: true})
        bound =
          out === null
            ? 'unreadable'
            : Object.fromEntries(
                out
                  .trim()
                  .split('\n')
                  .map((ino, i) => [['/workspace', '/data'][i], inodes[ino] ?? `inode ${ino}`]),
              )
      }
      const safe = bound === 'no container' || JSON.stringify(bound) === JSON.stringify({'/workspace': 'what was checked', '/data': 'what was checked'})
      const emptyNow = {owner: fs.statSync(empty).uid, entries: fs.readdirSync(empty)}
      expect(await finish({state, outcome, bound: safe ? 'what was checked, or nothing' : bound, empty: emptyNow}, before)).toEqual({
        ...EXPECTED[form], // refused, or up on what was checked
        bound: 'what was checked, or nothing',
        empty: {owner: 0, entries: []},
        box: [],
      })
    },
  )
})

// =====================================================================================================================
describe('5. root reads for the member (report)', () => {
  /** report --workspace DIR with DIR/.gpu-cosplay/fit.jsonl a link to `target`, the way `run` does it */
  function reportThrough(tag: string, run: (dir: string) => Result | Answer) {
    const dir = plantDir(B, path.join(homeB, tag))
    plantDir(B, path.join(dir, '.gpu-cosplay'))
    const link = path.join(dir, '.gpu-cosplay', 'fit.jsonl')
    const through = (target: string) => {
      plantLink(B, link, target)
      return run(dir)
    }
    return {
      fit: through(path.join(ROOT_ONLY, 'fit.jsonl')),
      other: through(path.join(ROOT_ONLY, 'other.txt')),
      missing: through(path.join(ROOT_ONLY, 'missing.txt')),
    }
  }
  /** what a report tells: exit, error code, rows and skipped lines (paths aside) */
  const told = (r: Result) => {
    const j = jsonOf(r)
    return {exit: r.exitCode, code: j?.error?.code, rows: j?.rows?.length, skipped: j?.skippedLines, message: j?.error?.message}
  }
  const leaks = (r: Result) => [SECRET, '4242', 'train.py'].filter((s) => `${r.stdout}${r.stderr}`.includes(s))

  it('through gpu-cosplay: nothing of a root-only fit file comes back; another root-only file is told apart from a missing one by nothing', async () => {
    const before = watch.take()
    const r = reportThrough('t5-cli', (dir) => box.cli(B, ['report', '--workspace', dir, '--json'])) as Record<string, Result>
    expect(await finish({fitLeaks: leaks(r.fit), fitRows: jsonOf(r.fit)?.rows?.length ?? 0, other: told(r.other)}, before)).toEqual({
      fitLeaks: [],
      fitRows: 0,
      other: told(r.missing),
      box: [],
    })
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2), nothing read', async () => {
    const before = watch.take()
    const r = reportThrough('t5-argv', (dir) => engineArgv(['report', '--workspace', dir, '--json'])) as Record<string, Answer>
    expect(await finish({fit: verdict(r.fit), fitLeaks: leaks(r.fit), other: verdict(r.other), missing: verdict(r.missing)}, before)).toEqual({
      fit: ENGINE_ARGV,
      fitLeaks: [],
      other: ENGINE_ARGV,
      missing: ENGINE_ARGV,
      box: [],
    })
  })

  it('as a request: the engine reads no file for a member (report is no op; session takes no path)', async () => {
    const before = watch.take()
    const dir = plantDir(B, path.join(homeB, 't5-req'))
    plantDir(B, path.join(dir, '.gpu-cosplay'))
    plantLink(B, path.join(dir, '.gpu-cosplay', 'fit.jsonl'), path.join(ROOT_ONLY, 'fit.jsonl'))
    const report = await request(box, B, [{v: 1, op: 'report', workspace: dir}], {close: true})
    const session = await request(box, B, [{v: 1, op: 'session', name: null, workspace: dir}], {close: true})
    expect(await finish({report: verdict(report), session: verdict(session), leaks: [...leaks(report), ...leaks(session)]}, before)).toEqual({
      report: BAD_REQUEST,
      session: BAD_REQUEST,
      leaks: [],
      box: [],
    })
  })
})

// =====================================================================================================================
describe("6 and 7. the member's own session: limits, and the ssh line it prints", () => {
  const limits = (session: string) => {
    const c = containerOf(session)
    if (!c) return 'no container'
    return {memoryLimited: c.HostConfig.Memory > 0, pidsLimited: c.HostConfig.PidsLimit > 0}
  }
  const LIMITED = {memoryLimited: true, pidsLimited: true}
  const rootSsh = () => rootSshView(ID)

  it("through gpu-cosplay: B's container has a memory and a pids limit, and the ssh line up --json prints logs in with B's own key", async () => {
    const before = watch.take()
    const name = nameB('own')
    const ws = plantDir(B, path.join(homeB, 't6-own'))
    const up = box.json(B, ['up', 't4', '--name', name, '--workspace', ws])
    const line: string | null = up.json.container?.connect?.ssh ?? null
    const key = line === null ? null : (/ -i (?:'([^']+)'|(\S+))/.exec(line)?.slice(1).find(Boolean) ?? null)
    const login = line === null ? null : box.as(B, ['sh', '-c', `${line.replace(/^ssh /, 'ssh -o BatchMode=yes -o ConnectTimeout=20 ')} id -u`])
    // review: ssh-config --install handed straight to the engine must write nothing of root's
    const rootSshBefore = rootSsh()
    const install = verdict(engineArgv(['ssh-config', name, '--install', '--json']))
    const rootSshAfter = rootSsh()
    expect(
      await finish(
        {
          up: {exit: up.exitCode, error: up.json.error},
          limits: limits(name),
          sshLine: typeof line,
          login: login && {exit: login.exitCode, out: login.stdout, err: login.exitCode === 0 ? '' : login.stderr},
          key: key && {inHome: key.startsWith(`${homeB}/`), owner: fs.existsSync(key) ? fs.statSync(key).uid : 'unreadable'},
          sshConfigInstall: {engine: install, rootSshChanged: JSON.stringify(rootSshBefore) !== JSON.stringify(rootSshAfter)},
        },
        before,
      ),
    ).toEqual({
      up: {exit: 0, error: undefined},
      limits: LIMITED,
      sshLine: 'string',
      login: {exit: 0, out: `${uidB}\n`, err: ''},
      key: {inHome: true, owner: uidB},
      sshConfigInstall: {engine: ENGINE_ARGV, rootSshChanged: false},
      box: [],
    })
  })

  it("as a request: the container has the limits, and B logs in with OpenSSH, B's own key and the host key from the session op", async () => {
    const before = watch.take()
    const name = nameB('own-req')
    const ws = plantDir(B, path.join(homeB, 't6-own-req'))
    const up = await request(box, B, [upRequest({name, container: containerRequest(ws, pubB)})])
    const s = await request(box, B, [{v: 1, op: 'session', name}])
    const reach = s.result ?? {}
    const known = plantFile(B, path.join(homeB, 't6-own-req-known_hosts'), `gcattack-${ID} ${reach.hostKey}\n`, 0o600)
    const login = box.as(B, [
      'ssh',
      ...[
        '-o',
        'BatchMode=yes',
        '-o',
        'ConnectTimeout=20',
        '-o',
        'StrictHostKeyChecking=yes',
        '-o',
        `UserKnownHostsFile=${known}`,
        '-o',
        `HostKeyAlias=gcattack-${ID}`,
      ],
      ...['-i', path.join(homeB, '.ssh', 'id_ed25519'), '-p', String(reach.sshPort), `${reach.user}@${reach.sshHost}`, 'id -u'],
    ])
    const limited = limits(name)
    const down = verdict(await request(box, B, [{v: 1, op: 'down', names: [name], all: false}]))
    const SERVED = {exit: 0, code: undefined, errorExit: undefined, served: true}
    expect(
      await finish(
        {
          up: verdict(up),
          limits: limited,
          session: verdict(s),
          login: {exit: login.exitCode, out: login.stdout, err: login.exitCode === 0 ? '' : login.stderr},
          down,
        },
        before,
      ),
    ).toEqual({up: SERVED, limits: LIMITED, session: SERVED, login: {exit: 0, out: `${uidB}\n`, err: ''}, down: SERVED, box: []})
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2)', async () => {
    const before = watch.take()
    const ws = plantDir(B, path.join(homeB, 't6-own-argv'))
    const a = engineArgv(['up', 't4', '--name', nameB('own-argv'), '--workspace', ws, '--json'])
    expect(await finish({up: verdict(a)}, before)).toEqual({up: ENGINE_ARGV, box: []})
  })
})

describe('6. limits a member cannot lift', () => {
  const publishedWide = () =>
    docker(['ps', '--filter', 'label=io.gpu-cosplay.session', '--format', '{{.Label "io.gpu-cosplay.session"}} {{.Ports}}'])
      .split('\n')
      .filter((l) => l.startsWith(`${userB}-${ID}`) && /0\.0\.0\.0:|\[?::\]?:/.test(l))

  it('through gpu-cosplay: up --ssh-bind 0.0.0.0 / :: and --shm-size 1t are refused (exit 2 or 4)', async () => {
    const before = watch.take()
    const ws = plantDir(B, path.join(homeB, 't6-limits-cli'))
    const tries = [
      ['--ssh-bind', '0.0.0.0'],
      ['--ssh-bind', '::'],
      ['--ssh-bind', '192.0.2.2'],
      ['--shm-size', '1t'],
    ]
    const seen = tries.map((flags, i) => {
      const r = cliVerdict(upAsB(nameB(`lim${i}`), ws, flags))
      return {flags: flags.join(' '), refused: r.exit === 2 || r.exit === 4, code: r.code, wide: publishedWide()}
    })
    expect(await finish({seen}, before)).toEqual({
      seen: tries.map((flags) => ({flags: flags.join(' '), refused: true, code: expect.any(String), wide: []})),
      box: [],
    })
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2)', async () => {
    const before = watch.take()
    const ws = plantDir(B, path.join(homeB, 't6-limits-argv'))
    const seen = [
      verdict(engineArgv(['up', 't4', '--name', nameB('lim-a'), '--workspace', ws, '--ssh-bind', '0.0.0.0', '--json'])),
      verdict(engineArgv(['up', 't4', '--name', nameB('lim-b'), '--workspace', ws, '--shm-size', '1t', '--json'])),
    ]
    expect(await finish({seen, wide: publishedWide()}, before)).toEqual({seen: [ENGINE_ARGV, ENGINE_ARGV], wide: [], box: []})
  })

  it('as a request: container.sshBind other than loopback and a shmSizeBytes of 1 TiB are refused (exit 2 or 4)', async () => {
    const before = watch.take()
    const ws = plantDir(B, path.join(homeB, 't6-limits-req'))
    const tries = [{sshBind: '0.0.0.0'}, {sshBind: '::'}, {sshBind: '192.0.2.2'}, {shmSizeBytes: 2 ** 40}, {sshPort: 22}]
    const seen: unknown[] = []
    for (const [i, fields] of tries.entries()) {
      const a = await request(box, B, [upRequest({name: nameB(`rlim${i}`), container: containerRequest(ws, pubB, fields)})])
      seen.push({
        fields,
        refused: (a.exitCode === 2 || a.exitCode === 4) && a.error?.exit === a.exitCode && !a.result,
        code: a.error?.code,
        wide: publishedWide(),
      })
    }
    expect(await finish({seen}, before)).toEqual({seen: tries.map((fields) => ({fields, refused: true, code: expect.any(String), wide: []})), box: []})
  })
})

describe('6. metrics --listen takes literal loopback only', () => {
  const HOSTS = '/etc/hosts'
  let hostsBefore: string
  let lan: string
  const name = `127.gcattack-${ID}`
  const port = () => 20_000 + Math.floor(Math.random() * 20_000)

  beforeAll(() => {
    lan = Object.values(os.networkInterfaces())
      .flat()
      .find((i) => i && i.family === 'IPv4' && !i.internal)!.address
    hostsBefore = fs.readFileSync(HOSTS, 'utf8')
    fs.writeFileSync(HOSTS, `${hostsBefore}${hostsBefore.endsWith('\n') ? '' : '\n'}${lan} ${name}\n`)
  })
  afterAll(() => fs.writeFileSync(HOSTS, hostsBefore))

  /** runs `argv` in the background until it exits or something listens on `address`:`p` */
  async function serveOrExit(argv: readonly string[], address: string, p: number) {
    const bg = track(box.start(B, argv))
    const state = await until(`metrics on ${address}:${p} or its exit`, () => (bg.exited() ? 'exited' : listening(address, p) ? 'listening' : null), 60_000)
    let scraped: number | null = null
    if (state === 'listening') scraped = (await fetch(`http://${address}:${p}/metrics`).catch(() => null))?.status ?? null
    bg.kill()
    const r = await bg.done
    return {state, exit: state === 'exited' ? r.exitCode : null, scraped, said: r.stdout + r.stderr}
  }

  it('through gpu-cosplay: a name that starts with "127." but resolves to the LAN address is refused (exit 4); 127.0.0.1 serves', async () => {
    const before = watch.take()
    const p1 = port()
    const named = await serveOrExit([CLI, 'metrics', '--listen', `${name}:${p1}`], lan, p1)
    const p2 = port()
    const literal = await serveOrExit([CLI, 'metrics', '--listen', `127.0.0.1:${p2}`], '127.0.0.1', p2)
    expect(await finish({named: {state: named.state, exit: named.exit}, literal: {state: literal.state, scraped: literal.scraped}}, before)).toEqual({
      named: {state: 'exited', exit: 4},
      literal: {state: 'listening', scraped: 200},
      box: [],
    })
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2), nothing listens', async () => {
    const before = watch.take()
    const p = port()
    const named = await serveOrExit(['/usr/bin/sudo', '-n', ENGINE, 'metrics', '--listen', `${name}:${p}`], lan, p)
    const a = answerOf({exitCode: named.exit, stdout: named.said, stderr: ''})
    expect(await finish({state: named.state, engine: verdict(a)}, before)).toEqual({state: 'exited', engine: ENGINE_ARGV, box: []})
  })

  it('as a request: the engine serves no metrics (BAD_REQUEST, exit 2), nothing listens', async () => {
    const before = watch.take()
    const p = port()
    const a = await request(box, B, [{v: 1, op: 'metrics', listen: `${name}:${p}`}], {close: true})
    expect(await finish({engine: verdict(a), listening: listening(lan, p)}, before)).toEqual({engine: BAD_REQUEST, listening: false, box: []})
  })
})

describe('6. a member who stops reading the engine does not stall the queue', () => {
  type Form = 'cli' | 'argv' | 'request'
  /** B's waiting up in each form: the argv the helper runs */
  const command = (form: Form, name: string) => {
    const flags = ['up', 't4', '--no-container', '--wait', '--timeout', '10m', '--name', name]
    if (form === 'cli') return [CLI, ...flags]
    if (form === 'argv') return ['/usr/bin/sudo', '-n', ENGINE, ...flags]
    return ['--stdin-line', JSON.stringify(upRequest({name, wait: true, timeoutMs: 600_000})), '--', '/usr/bin/sudo', '-n', ENGINE]
  }
  /** where B's attack is set up (queued) and where it is refused at once (argv) */
  const STATE: Record<Form, string> = {cli: 'queued', argv: 'done', request: 'queued'}

  /**
   * B waits first (the GPU full), then stops the engine's progress by `stall` (started by the file GO; it says it is
   * done in DONE); the teammate queues behind B; two slices free. The teammate must come up within its --timeout.
   */
  /** whether the job in the foreground of B's terminal is stopped: its sudo where it has one, else any of it */
  function foregroundStopped(bg: Background): boolean {
    const below = descendants(bg.pid)
    const terminal = below.find((p) => p.sid === p.pid && p.tpgid > 0)
    if (!terminal) return false
    const job = below.filter((p) => p.pgrp === terminal.tpgid)
    const sudo = job.filter((p) => p.comm === 'sudo')
    return (sudo.length > 0 ? sudo : job).some((p) => procState(p.pid) === 'T')
  }

  async function teammateBehind(form: Form, tag: string, helper: string, stalledYet: (bg: Background) => boolean) {
    const before = watch.take()
    const fillers = fillGpu(box, `${ID}${tag}${form[0]}`)
    const go = path.join(homeB, `t6-${tag}-${form}-go`)
    const done = path.join(homeB, `t6-${tag}-${form}-done`)
    const stalled = track(box.start(B, ['/usr/bin/python3', helper, go, done, ...command(form, nameB(`${tag}-${form}`))]))
    const stateB = await queuedOrDone(box, userB, stalled)
    plantFile(B, go, '')
    if (stateB === 'queued') await until(`${tag}: B's stall in place`, () => stalled.exited() || (fs.existsSync(done) && stalledYet(stalled)))
    const behind = track(box.start(A, [CLI, 'up', 't4', '--no-container', '--wait', '--timeout', '60s', '--name', `${userA}-${ID}-behind`, '--json']))
    const stateA = await queuedOrDone(box, userA, behind)
    // two slices free: one for each
    downAsRoot(box, fillers.slice(0, 2))
    const teammateUp = cliVerdict(await behind.done)
    expect(await finish({stateB, stateA, teammateUp}, before)).toEqual({stateB: STATE[form], stateA: 'queued', teammateUp: {exit: 0, code: undefined}, box: []})
  }

  it.each(['cli', 'argv', 'request'] as Form[])(
    '%s: B fills the output pipe and never reads it; the teammate queued behind comes up once slices free, within its --timeout',
    (form) => teammateBehind(form, 'pipe', FILLER, () => true),
  )

  it.each(['cli', 'argv', 'request'] as Form[])(
    '%s: B runs it at a terminal and types Ctrl-Z; the teammate queued behind comes up once slices free, within its --timeout',
    // stalled once the terminal's foreground job is stopped: its sudo where it has one (sudo stops itself only after
    // suspending what it runs), else any of its processes
    (form) => teammateBehind(form, 'ctrl-z', SUSPENDER, (bg) => foregroundStopped(bg)),
  )
})

// =====================================================================================================================
describe("review: root's ssh identity is never used for --host, remote install or ssh-config", () => {
  let rec: Awaited<ReturnType<typeof uidRecorder>>
  beforeAll(async () => (rec = await uidRecorder(KIT)))
  afterAll(() => rec.close())
  const host = () => `ssh://${userB}@127.0.0.1:${rec.port}`
  const commands = () => [
    ['ps', '--host', host()],
    ['status', '--host', host()],
    ['remote', 'install', '--host', host()],
    ['ssh-config', 'x', '--host', host()],
    ['up', 't4', '--no-container', '--host', host()],
  ]
  const rootDialled = (from: number) =>
    rec
      .uids()
      .slice(from)
      .filter((uid) => uid === 0).length

  /** root has an ssh identity, as on a real box (afterEach removes the one the suite made) */
  const rootIdentity = () => {
    fs.mkdirSync('/root/.ssh', {mode: 0o700, recursive: true})
    if (fs.existsSync('/root/.ssh/id_ed25519')) return
    const made = spawnSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-f', '/root/.ssh/id_ed25519'], {encoding: 'utf8'})
    if (made.status !== 0) throw new Error(`ssh-keygen for root: ${made.stderr}`)
    madeRootKey = true
  }

  it('through gpu-cosplay: they run as the member (no connection from uid 0)', async () => {
    rootIdentity()
    const before = watch.take()
    const from = rec.uids().length
    for (const args of commands()) box.cli(B, [...args, '--json'])
    expect(await finish({dialled: rec.uids().length > from, rootDialled: rootDialled(from)}, before)).toEqual({dialled: true, rootDialled: 0, box: []})
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2), no connection from uid 0', async () => {
    rootIdentity()
    const before = watch.take()
    const from = rec.uids().length
    const seen = commands().map((args) => ({args: args[0], ...verdict(engineArgv([...args, '--json']))}))
    expect(await finish({seen, rootDialled: rootDialled(from)}, before)).toEqual({
      seen: commands().map((args) => ({args: args[0], ...ENGINE_ARGV})),
      rootDialled: 0,
      box: [],
    })
  })

  it('as a request: no op takes a host (BAD_REQUEST, exit 2), no connection from uid 0', async () => {
    rootIdentity()
    const before = watch.take()
    const from = rec.uids().length
    const requests = [
      {v: 1, op: 'remote-install', host: host()},
      {v: 1, op: 'status', orphans: false, host: host()},
      {v: 1, op: 'authorize-key', name: null, publicKey: pubB, host: host()},
      upRequest({host: host()}),
    ]
    const seen: unknown[] = []
    for (const r of requests) seen.push({op: r.op, ...verdict(await request(box, B, [r], {close: true}))})
    expect(await finish({seen, rootDialled: rootDialled(from)}, before)).toEqual({
      seen: requests.map((r) => ({op: r.op, ...BAD_REQUEST})),
      rootDialled: 0,
      box: [],
    })
  })
})

// =====================================================================================================================
describe('review: waiters are capped per user (QUEUE_FULL, exit 4)', () => {
  const MAX_TRIED = 10
  type Form = 'cli' | 'argv' | 'request'
  const waiter = (form: Form, name: string): {bg: Background; outcome: () => Promise<unknown>} => {
    const flags = ['up', 't4', '--no-container', '--wait', '--timeout', '10m', '--name', name, '--json']
    if (form === 'cli') {
      const bg = track(box.start(B, [CLI, ...flags]))
      return {bg, outcome: async () => cliVerdict(await bg.done)}
    }
    if (form === 'argv') {
      const bg = track(box.start(B, ['/usr/bin/sudo', '-n', ENGINE, ...flags]))
      return {bg, outcome: async () => verdict(answerOf(await bg.done))}
    }
    const req = openRequest(box, B, [upRequest({name, wait: true, timeoutMs: 600_000})])
    return {bg: req.bg, outcome: async () => verdict(await req.answer)}
  }

  it.each(['cli', 'argv', 'request'] as Form[])(`%s: one of at most ${MAX_TRIED} waiters of one member is refused`, async (form) => {
    const before = watch.take()
    fillGpu(box, `${ID}q${form}`)
    let queued = 0
    let refusal: unknown = `all ${MAX_TRIED} queued`
    for (let i = 0; i < MAX_TRIED; i++) {
      const w = waiter(form, nameB(`w${form[0]}${i}`))
      if ((await queuedOrDone(box, userB, w.bg, queued + 1)) === 'done') {
        refusal = await w.outcome()
        break
      }
      queued++
    }
    const expected = form === 'cli' ? {exit: 4, code: 'QUEUE_FULL'} : form === 'argv' ? ENGINE_ARGV : REFUSED(4, 'QUEUE_FULL')
    expect(await finish({refusal, someQueued: form === 'argv' || queued > 0}, before)).toEqual({refusal: expected, someQueued: true, box: []})
  })
})

// =====================================================================================================================
describe("review: the engine is detached from the caller's session and job control", () => {
  type Form = 'cli' | 'argv' | 'request'
  it.each(['cli', 'argv', 'request'] as Form[])(
    "%s: while it serves a waiting up, the engine's session and process group are not the caller's",
    async (form) => {
      const before = watch.take()
      fillGpu(box, `${ID}d${form}`)
      const name = nameB(`detach-${form}`)
      const flags = ['up', 't4', '--no-container', '--wait', '--timeout', '10m', '--name', name, '--json']
      const call =
        form === 'cli'
          ? {bg: track(box.start(B, [CLI, ...flags])), answer: null}
          : form === 'argv'
            ? {bg: track(box.start(B, ['/usr/bin/sudo', '-n', ENGINE, ...flags])), answer: null}
            : openRequest(box, B, [upRequest({name, wait: true, timeoutMs: 600_000})])
      const state = await queuedOrDone(box, userB, call.bg)
      let seen: unknown
      if (state === 'queued') {
        const caller = procInfo(call.bg.pid)!
        const engines = descendants(call.bg.pid).filter((p) => p.uid === 0 && p.comm.startsWith('node'))
        seen = {
          engines: engines.length > 0,
          inCallersSession: engines.filter((p) => p.sid === caller.sid).length,
          inCallersGroup: engines.filter((p) => p.pgrp === caller.pgrp).length,
        }
      } else seen = {refused: call.answer ? verdict(await call.answer) : verdict(answerOf(await call.bg.done))}
      const expected = form === 'argv' ? {refused: ENGINE_ARGV} : {engines: true, inCallersSession: 0, inCallersGroup: 0}
      expect(await finish({seen}, before)).toEqual({seen: expected, box: []})
    },
  )
})

// =====================================================================================================================
describe('review: durations that overflow (exit 2)', () => {
  const TTLS = ['100000000d', '99999999999999999999s', '9007199254740993s']

  it('through gpu-cosplay: up --ttl is refused with exit 2 before anything changes', async () => {
    const before = watch.take()
    const seen = TTLS.map((ttl, i) => ({ttl, exit: box.cli(B, ['up', 't4', '--no-container', '--name', nameB(`ttl${i}`), '--ttl', ttl, '--json']).exitCode}))
    expect(await finish({seen}, before)).toEqual({seen: TTLS.map((ttl) => ({ttl, exit: 2})), box: []})
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2)', async () => {
    const before = watch.take()
    const seen = TTLS.map((ttl, i) => verdict(engineArgv(['up', 't4', '--no-container', '--name', nameB(`attl${i}`), '--ttl', ttl, '--json'])))
    expect(await finish({seen}, before)).toEqual({seen: TTLS.map(() => ENGINE_ARGV), box: []})
  })

  it('as a request: ttlMs, timeoutMs and byMs out of bounds are BAD_REQUEST (exit 2)', async () => {
    const before = watch.take()
    const requests = [
      upRequest({name: nameB('rttl0'), ttlMs: 1e300}),
      upRequest({name: nameB('rttl1'), ttlMs: 2 ** 53 + 2}),
      upRequest({name: nameB('rttl2'), ttlMs: -1}),
      upRequest({name: nameB('rttl3'), ttlMs: 1.5}),
      upRequest({name: nameB('rttl4'), ttlMs: '8h'}),
      upRequest({name: nameB('rttl5'), wait: true, timeoutMs: 1e300}),
      {v: 1, op: 'extend', name: nameB('none'), byMs: 1e300},
      {v: 1, op: 'extend', name: nameB('none'), byMs: -60_000},
    ]
    const seen: unknown[] = []
    for (const r of requests) seen.push(verdict(await request(box, B, [r], {close: true})))
    expect(await finish({seen}, before)).toEqual({seen: requests.map(() => BAD_REQUEST), box: []})
  })
})

describe('review: --image with path characters (BAD_IMAGE, exit 2)', () => {
  const IMAGES = ['../../containers/json?x', 'x/../../../containers/create?name=owned', '%2e%2e/%2e%2e/containers/json', 'img#frag', 'a b']

  it('through gpu-cosplay: refused before Docker is asked', async () => {
    const before = watch.take()
    const ws = plantDir(B, path.join(homeB, 't-image-cli'))
    const seen = IMAGES.map((image, i) => ({image, ...cliVerdict(upAsB(nameB(`img${i}`), ws, ['--image', image]))}))
    expect(await finish({seen}, before)).toEqual({seen: IMAGES.map((image) => ({image, exit: 2, code: 'BAD_IMAGE'})), box: []})
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2)', async () => {
    const before = watch.take()
    const ws = plantDir(B, path.join(homeB, 't-image-argv'))
    const seen = IMAGES.map((image, i) => verdict(engineArgv(['up', 't4', '--name', nameB(`aimg${i}`), '--workspace', ws, '--image', image, '--json'])))
    expect(await finish({seen}, before)).toEqual({seen: IMAGES.map(() => ENGINE_ARGV), box: []})
  })

  it('as a request: container.image with path characters is refused (exit 2, BAD_IMAGE or BAD_REQUEST)', async () => {
    const before = watch.take()
    const ws = plantDir(B, path.join(homeB, 't-image-req'))
    const seen: unknown[] = []
    for (const [i, image] of IMAGES.entries()) {
      const a = await request(box, B, [upRequest({name: nameB(`rimg${i}`), container: containerRequest(ws, pubB, {image})})])
      seen.push({image, ...verdict(a)})
    }
    expect(await finish({seen}, before)).toEqual({
      seen: IMAGES.map((image) => ({image, ...REFUSED(2, expect.stringMatching(/^BAD_(IMAGE|REQUEST)$/))})),
      box: [],
    })
  })
})

describe('review: system install refuses a program under a sticky folder (as root)', () => {
  it('--nvidia-smi and --mps-control under /tmp are refused; the configuration stays', async () => {
    const before = watch.take()
    const dir = `/tmp/gcattack-${ID}-sticky`
    fs.rmSync(dir, {recursive: true, force: true})
    fs.mkdirSync(dir, {mode: 0o755})
    try {
      const prog = path.join(dir, 'nvidia-smi')
      fs.writeFileSync(prog, '#!/bin/sh\nexec /opt/gpu-cosplay-e2e-sim/nvidia-smi "$@"\n', {mode: 0o755})
      const seen = ['--nvidia-smi', '--mps-control'].map((flag) => ({
        flag,
        refused: box.root(['system', 'install', flag, prog, '--yes', '--json']).exitCode !== 0,
      }))
      expect(await finish({seen}, before)).toEqual({
        seen: [
          {flag: '--nvidia-smi', refused: true},
          {flag: '--mps-control', refused: true},
        ],
        box: [],
      })
    } finally {
      fs.rmSync(dir, {recursive: true, force: true})
    }
  })
})

describe("review: a member may not squat a teammate's session names (NAME_RESERVED, exit 4)", () => {
  const SQUATS = [`${userA}-t4`, `${userA}-${ID}-x`, `${userA}-`]

  it("through gpu-cosplay: names starting with the teammate's user name and '-' are refused; B's own prefix works", async () => {
    const before = watch.take()
    const seen = SQUATS.map((name) => ({name, ...cliVerdict(box.cli(B, ['up', 't4', '--no-container', '--name', name, '--json']))}))
    const own = cliVerdict(box.cli(B, ['up', 't4', '--no-container', '--name', nameB('mine'), '--json']))
    expect(await finish({seen, own}, before)).toEqual({
      seen: SQUATS.map((name) => ({name, exit: 4, code: 'NAME_RESERVED'})),
      own: {exit: 0, code: undefined},
      box: [],
    })
  })

  it('straight to the engine with argv: ENGINE_ARGV (exit 2)', async () => {
    const before = watch.take()
    const seen = SQUATS.map((name) => verdict(engineArgv(['up', 't4', '--no-container', '--name', name, '--json'])))
    expect(await finish({seen}, before)).toEqual({seen: SQUATS.map(() => ENGINE_ARGV), box: []})
  })

  it('as a request: NAME_RESERVED (exit 4)', async () => {
    const before = watch.take()
    const seen: unknown[] = []
    for (const name of SQUATS) seen.push({name, ...verdict(await request(box, B, [upRequest({name})]))})
    expect(await finish({seen}, before)).toEqual({seen: SQUATS.map((name) => ({name, ...REFUSED(4, 'NAME_RESERVED')})), box: []})
  })
})

// =====================================================================================================================
describe('review: the engine given malformed or forbidden bytes answers without changing anything', () => {
  it('hello answers protocol 1 (the control: the protocol is there)', async () => {
    const a = await request(box, B, [{v: 1, op: 'hello'}])
    expect({...verdict(a), protocol: a.result?.protocol}).toEqual({exit: 0, code: undefined, errorExit: undefined, served: true, protocol: 1})
  })

  it('any argument at all is ENGINE_ARGV (exit 2), whatever stdin holds', async () => {
    const before = watch.take()
    const ARGVS = [['hello'], ['--help'], ['--version'], ['-'], [''], ['--', '{"v":1,"op":"hello"}'], ['ps', '--json'], ['{"v":1,"op":"hello"}']]
    const seen = ARGVS.map((argv) => ({argv, ...verdict(engineArgv(argv, '{"v":1,"op":"hello"}\n'))}))
    expect(await finish({seen}, before)).toEqual({seen: ARGVS.map((argv) => ({argv, ...ENGINE_ARGV})), box: []})
  })

  it('malformed requests are BAD_REQUEST (exit 2)', async () => {
    const before = watch.take()
    const ws = plantDir(B, path.join(homeB, 't-malformed'))
    const CASES: Array<{what: string; bytes: string | object}> = [
      {what: 'not JSON', bytes: 'hello\n'},
      {what: 'an empty line', bytes: '\n'},
      {what: 'nothing at all', bytes: ''},
      {what: 'an array', bytes: '[{"v":1,"op":"hello"}]\n'},
      {what: 'a string', bytes: '"hello"\n'},
      {what: 'null', bytes: 'null\n'},
      {what: 'no version', bytes: {op: 'hello'}},
      {what: 'version 2', bytes: {v: 2, op: 'hello'}},
      {what: 'version "1"', bytes: {v: '1', op: 'hello'}},
      {what: 'an unknown op', bytes: {v: 1, op: 'become-root'}},
      {what: 'an op of another case', bytes: {v: 1, op: 'HELLO'}},
      {what: 'an unknown field', bytes: {v: 1, op: 'hello', argv: ['system', 'install']}},
      {what: '__proto__', bytes: '{"v":1,"op":"hello","__proto__":{"admin":true}}\n'},
      {what: 'a caller claimed in the request', bytes: {v: 1, op: 'down', names: [teammate], all: false, uid: MEMBERS.a.uid, user: userA}},
      {what: 'a field of the wrong type', bytes: upRequest({hostGpu: '0'})},
      {what: 'a missing field', bytes: (({match: _match, ...rest}) => rest)(upRequest())},
      {what: 'an unknown field inside container', bytes: upRequest({container: containerRequest(ws, pubB, {privileged: true})})},
      {what: 'an env name that is not one', bytes: upRequest({container: containerRequest(ws, pubB, {env: [{name: 'A=B', value: 'x'}]})})},
      {what: 'a relative workspace', bytes: upRequest({container: containerRequest('ws', pubB)})},
      {what: 'a port out of range', bytes: upRequest({container: containerRequest(ws, pubB, {sshPort: 70_000})})},
      {what: 'two requests on one line', bytes: `{"v":1,"op":"hello"}{"v":1,"op":"down","names":["${teammate}"],"all":false}\n`},
      {what: 'a NUL after the request', bytes: '{"v":1,"op":"hello"}\u0000\n'},
      {what: 'a line over 1 MiB', bytes: `{"v":1,"op":"hello","pad":"${'x'.repeat(2 * 1024 * 1024)}"}\n`},
    ]
    const seen: unknown[] = []
    for (const c of CASES) seen.push({what: c.what, ...verdict(await request(box, B, [c.bytes], {close: true}))})
    expect(await finish({seen}, before)).toEqual({seen: CASES.map((c) => ({what: c.what, ...BAD_REQUEST})), box: []})
  })

  it('a second request after the first is not served: BAD_REQUEST (exit 2), the first undone', async () => {
    const before = watch.take()
    const first = nameB('first')
    const a = await request(box, B, [upRequest({name: first}), {v: 1, op: 'down', names: [teammate], all: false}])
    const left = sessionNames(box).includes(first)
    expect(await finish({engine: verdict(a), firstLeftUp: left}, before)).toEqual({engine: BAD_REQUEST, firstLeftUp: false, box: []})
  })

  it('requests a member may not make are refused with exit 4 (NOT_OWNER, ROOT_ONLY, ...)', async () => {
    const before = watch.take()
    const ws = plantDir(B, path.join(homeB, 't-forbidden'))
    const CASES: Array<{what: string; bytes: object; code: string}> = [
      {what: "down the teammate's session", bytes: {v: 1, op: 'down', names: [teammate], all: false}, code: 'NOT_OWNER'},
      {what: "extend the teammate's session", bytes: {v: 1, op: 'extend', name: teammate, byMs: 60_000}, code: 'NOT_OWNER'},
      {what: "exec in the teammate's session", bytes: {v: 1, op: 'exec', name: teammate, argv: ['id'], tty: false, rows: null, cols: null}, code: 'NOT_OWNER'},
      {what: "a key into the teammate's session", bytes: {v: 1, op: 'authorize-key', name: teammate, publicKey: pubB}, code: 'NOT_OWNER'},
      {what: "the teammate's session's reach", bytes: {v: 1, op: 'session', name: teammate}, code: 'NOT_OWNER'},
      {what: "verify the teammate's session", bytes: {v: 1, op: 'verify', name: teammate, perf: false, cpu: false}, code: 'NOT_OWNER'},
      {what: 'lock the clock', bytes: upRequest({name: nameB('clock'), lockClock: true}), code: 'ROOT_ONLY'},
      {what: 'cap the power', bytes: upRequest({name: nameB('power'), capPower: true}), code: 'ROOT_ONLY'},
      {
        what: 'sudo in the container',
        bytes: upRequest({name: nameB('sudo'), container: containerRequest(ws, pubB, {sudo: true})}),
        code: 'CONTAINER_SUDO_NOT_ALLOWED',
      },
      {
        what: "mount the teammate's home",
        bytes: upRequest({name: nameB('mount'), container: containerRequest(ws, pubB, {volumes: [{source: homeA, target: '/data', readOnly: true}]})}),
        code: 'MOUNT_NOT_ALLOWED',
      },
      {
        what: "the teammate's home as workspace",
        bytes: upRequest({name: nameB('mount2'), container: containerRequest(path.join(homeA, 'ws'), pubB)}),
        code: 'MOUNT_NOT_ALLOWED',
      },
    ]
    const seen: unknown[] = []
    for (const c of CASES) seen.push({what: c.what, ...verdict(await request(box, B, [c.bytes]))})
    expect(await finish({seen}, before)).toEqual({seen: CASES.map((c) => ({what: c.what, ...REFUSED(4, c.code)})), box: []})
  })
})

// =====================================================================================================================
describe('at the end', () => {
  it("the teammate's session still answers the teammate, and nothing of the suite is left running", async () => {
    await settle(box, [teammate])
    const r = box.cli(A, ['exec', teammate, '--', 'cat', '/workspace/notes.txt'])
    expect({exit: r.exitCode, out: r.stdout, sessions: sessionNames(box)}).toEqual({exit: 0, out: 'the teammate works here\n', sessions: [teammate]})
    expect(
      spawnSync('docker', ['ps', '-a', '--filter', 'label=io.gpu-cosplay.session', '--format', '{{.Label "io.gpu-cosplay.session"}}'], {
        encoding: 'utf8',
      }).stdout.trim(),
    ).toBe(teammate)
  })
})
