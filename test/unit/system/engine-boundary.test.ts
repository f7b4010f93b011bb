/**
 * The engine boundary's own parts, for real where they can be: the entry point is run (with a stand-in node that
 * prints what reached it), the sudoers rule goes through visudo, the configuration reader meets links and loose modes.
 * Unit tests run as root in CI, as an admin's `system install` does.
 */
import {spawnSync} from 'node:child_process'
import {chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {homedir, tmpdir} from 'node:os'
import {join} from 'node:path'

import {readBoxConfig} from '../../../src/core/read-box-config.js'
import {renderEntryPoint, renderSudoers} from '../../../src/system/entry-point.js'
import {groupId} from '../../../src/core/user-groups.js'
import {whyNotRootOnly, whyTreeNotRootOnly} from '../../../src/system/trusted-path.js'

const isRoot = process.getuid?.() === 0
const asRoot = isRoot ? it : it.skip
let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'gc-boundary-'))
  chmodSync(dir, 0o755)
})
afterEach(() => rmSync(dir, {recursive: true, force: true}))

describe('the group file', () => {
  it('finds a group id in a group file', () => {
    const file = join(dir, 'group')
    writeFileSync(file, 'root:x:0:\ngpu-cosplay:x:997:alice,bob\n')
    expect([groupId('gpu-cosplay', file), groupId('docker', file)]).toEqual([997, null])
  })
})

describe('the entry point', () => {
  /** runs the rendered script with stand-ins for setsid and node that print their arguments and environment */
  function runEntryPoint(env: Record<string, string>, args: string[]): {argv: string[]; env: Record<string, string>} {
    const fakeNode = join(dir, 'node')
    writeFileSync(fakeNode, '#!/bin/sh\nfor a do printf "arg=%s\\n" "$a"; done\nenv\n', {mode: 0o755})
    const fakeSetsid = join(dir, 'setsid')
    writeFileSync(fakeSetsid, '#!/bin/sh\nprintf "setsid=%s\\n" "$1"; shift; exec "$@"\n', {mode: 0o755})
    const script = join(dir, 'engine')
    writeFileSync(script, renderEntryPoint(fakeNode, '/opt/gc/dist/engine.js', fakeSetsid), {mode: 0o755})
    const r = spawnSync(script, args, {env, encoding: 'utf8'})
    expect(r.status).toBe(0)
    const lines = r.stdout.split('\n').filter(Boolean)
    return {
      argv: lines.filter((l) => l.startsWith('arg=') || l.startsWith('setsid=')).map((l) => l),
      // the stand-in's own shell adds PWD (and SHLVL); the rest came through the entry point
      env: Object.fromEntries(
        lines
          .filter((l) => !l.startsWith('arg=') && !l.startsWith('setsid='))
          .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)])
          .filter(([name]) => name !== 'PWD' && name !== 'SHLVL'),
      ),
    }
  }

  it("runs the engine (not the CLI) in a session of its own, with none of the caller's variables; arguments pass only to be refused", () => {
    const seen = runEntryPoint(
      {
        SUDO_UID: '1301',
        SUDO_GID: '1301',
        SUDO_USER: 'alice',
        TERM: 'xterm-256color',
        NODE_OPTIONS: '--require /tmp/evil.js',
        PATH: '/home/alice/bin:/usr/bin:/bin',
        GPU_COSPLAY_NVIDIA_SMI: '/home/alice/smi',
        GPU_COSPLAY_STATE_DIR: '/tmp/x',
        LD_PRELOAD: '/tmp/evil.so',
        GPU_COSPLAY_CANCEL_ON_EOF: '1',
      },
      ['up', '3090', '--env', 'A=$(id) `id` ; x'],
    )
    expect(seen.argv).toEqual(['setsid=--wait', 'arg=/opt/gc/dist/engine.js', 'arg=up', 'arg=3090', 'arg=--env', 'arg=A=$(id) `id` ; x'])
    expect(seen.env).toEqual({
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      LANG: 'C.UTF-8',
      HOME: '/root',
      SUDO_UID: '1301',
      SUDO_GID: '1301',
      SUDO_USER: 'alice',
      GPU_COSPLAY_ENGINE: 'caller',
    })
  })

  const hasVisudo = spawnSync('sh', ['-c', 'command -v visudo']).status === 0
  ;(hasVisudo ? it : it.skip)('the sudoers rule passes visudo', () => {
    const file = join(dir, 'rule')
    writeFileSync(file, renderSudoers('gpu-cosplay'), {mode: 0o440})
    const r = spawnSync('visudo', ['-cqf', file], {encoding: 'utf8'})
    expect([r.status, r.stderr]).toEqual([0, ''])
  })
})

describe('the configuration', () => {
  const valid =
    'version: 1\ngroup: gpu-cosplay\nstateDir: /var/lib/gpu-cosplay\nnvidiaSmi: /usr/bin/nvidia-smi\nmpsControl: null\nengine: /usr/local/libexec/gpu-cosplay/engine\nallowContainerSudo: false\n'

  asRoot('reads a root-owned, root-only file', () => {
    const file = join(dir, 'config.yaml')
    writeFileSync(file, valid, {mode: 0o644})
    expect(readBoxConfig(file)).toMatchObject({ok: true, config: {group: 'gpu-cosplay', mpsControl: null}})
  })

  asRoot('refuses a link, a file others own or may write, an unknown field', () => {
    const real = join(dir, 'real.yaml')
    writeFileSync(real, valid, {mode: 0o644})
    const link = join(dir, 'link.yaml')
    symlinkSync(real, link)
    expect(readBoxConfig(link)).toMatchObject({ok: false, why: expect.stringContaining('symlink')})
    const loose = join(dir, 'loose.yaml')
    writeFileSync(loose, valid, {mode: 0o666})
    chmodSync(loose, 0o666)
    expect(readBoxConfig(loose)).toMatchObject({ok: false})
    const theirs = join(dir, 'theirs.yaml')
    writeFileSync(theirs, valid, {mode: 0o644})
    chownSync(theirs, 1234, 1234)
    expect(readBoxConfig(theirs)).toMatchObject({ok: false, why: expect.stringContaining('uid 1234')})
    const extra = join(dir, 'extra.yaml')
    writeFileSync(extra, `${valid}evil: 1\n`, {mode: 0o644})
    expect(readBoxConfig(extra)).toMatchObject({ok: false})
    expect(readBoxConfig(join(dir, 'none.yaml'))).toBeNull()
  })
})

describe('what root may run must be root’s alone', () => {
  // /tmp is world-writable: a folder under it, anyone may have made first (and made theirs): root's own folders only
  let rootOnly: string
  beforeEach(() => {
    if (!isRoot) return
    // root's home, else another folder of root's alone all the way up (never under /tmp)
    const base = [homedir(), '/root', '/run', '/var/lib'].find((d) => existsSync(d) && whyNotRootOnly(d) === null)
    rootOnly = mkdtempSync(join(base ?? '/root', '.gc-boundary-'))
    chmodSync(rootOnly, 0o755)
  })
  afterEach(() => {
    if (isRoot) rmSync(rootOnly, {recursive: true, force: true})
  })

  asRoot('a root-only file under root-only folders passes', () => {
    const file = join(rootOnly, 'prog')
    writeFileSync(file, '#!/bin/sh\n', {mode: 0o755})
    expect(whyNotRootOnly(file)).toBeNull()
  })

  asRoot('a root-owned file under a sticky world-writable folder (/tmp) fails: anyone may have made the folder above it', () => {
    const sticky = join(rootOnly, 'tmp')
    mkdirSync(sticky)
    chmodSync(sticky, 0o1777)
    const sub = join(sticky, 'prog-dir')
    mkdirSync(sub, {mode: 0o755})
    const file = join(sub, 'prog')
    writeFileSync(file, '#!/bin/sh\n', {mode: 0o755})
    expect(whyNotRootOnly(file)).not.toBeNull()
    // the test's own temp folder sits under the system's /tmp
    const underTmp = join(dir, 'prog')
    writeFileSync(underTmp, '#!/bin/sh\n', {mode: 0o755})
    expect(whyNotRootOnly(underTmp)).not.toBeNull()
  })

  asRoot('a file others may write, or a folder above it that another user owns, fails', () => {
    const sub = join(rootOnly, 'sub')
    mkdirSync(sub)
    const file = join(sub, 'prog')
    writeFileSync(file, '#!/bin/sh\n', {mode: 0o755})
    chmodSync(file, 0o775)
    expect(whyNotRootOnly(file)).toContain('writable by others')
    chmodSync(file, 0o755)
    chownSync(sub, 1234, 1234)
    expect(whyNotRootOnly(file)).toContain('uid 1234')
  })

  asRoot('a package with one file of someone else deep inside fails', () => {
    const deep = join(rootOnly, 'pkg', 'node_modules', 'x')
    mkdirSync(deep, {recursive: true})
    writeFileSync(join(deep, 'index.js'), '')
    expect(whyTreeNotRootOnly(join(rootOnly, 'pkg'))).toBeNull()
    chownSync(join(deep, 'index.js'), 1234, 1234)
    expect(whyTreeNotRootOnly(join(rootOnly, 'pkg'))).toContain('index.js')
  })
})
