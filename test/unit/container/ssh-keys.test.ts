/**
 * The generated key pair in a state directory a team shares: <state>/users/ is 1777, <state>/users/<uid>/ and its
 * ssh/ are the user's (0700), keys 0600. Real files; the second-user cases run a bundle of ssh-keys.ts as `nobody`
 * (root only), as a teammate would.
 */
import {afterEach, beforeEach, describe, expect, it} from '@jest/globals'
import {spawnSync} from 'node:child_process'
import {chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {build} from 'esbuild'

import {loadOrCreateSshIdentity} from '../../../src/container/ssh-keys.js'
import {SHARED_STATE_POLICY as SANDBOX} from '../../../src/core/state-policy.js'

const ROOT = process.cwd()
const uid = process.getuid!()
const isRoot = uid === 0
const modeOf = (path: string) => statSync(path).mode & 0o7777

let base: string
let state: string
let home: string

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'gpu-cosplay-keys-'))
  chmodSync(base, 0o755)
  state = join(base, 'state')
  mkdirSync(state)
  chmodSync(state, 0o1777)
  home = join(base, 'home') // no ~/.ssh/id_ed25519: the pair is generated
  mkdirSync(home)
})

afterEach(() => rmSync(base, {recursive: true, force: true}))

const mine = () => join(state, 'users', String(uid))

describe('ssh key folders in a shared state directory', () => {
  it('creates users/ shared and sticky, the user folder and key private', async () => {
    const identity = await loadOrCreateSshIdentity({trust: SANDBOX, userDir: mine(), homeDir: home})
    expect(identity.source).toBe('generated')
    expect(modeOf(join(state, 'users'))).toBe(0o1777)
    expect(modeOf(mine())).toBe(0o700)
    expect(modeOf(join(mine(), 'ssh'))).toBe(0o700)
    expect(modeOf(identity.privateKeyPath)).toBe(0o600)
    expect((await loadOrCreateSshIdentity({trust: SANDBOX, userDir: mine(), homeDir: home})).publicKey).toBe(identity.publicKey)
  })

  it('repairs a private users/ of its own left by an older version, keeping the key', async () => {
    const first = await loadOrCreateSshIdentity({trust: SANDBOX, userDir: mine(), homeDir: home})
    chmodSync(join(state, 'users'), 0o700)
    const again = await loadOrCreateSshIdentity({trust: SANDBOX, userDir: mine(), homeDir: home})
    expect(modeOf(join(state, 'users'))).toBe(0o1777)
    expect(again.publicKey).toBe(first.publicKey)
  })

  describe('a second user (runs as nobody)', () => {
    let bundle: string
    const nobody = 65534

    beforeEach(async () => {
      if (!isRoot) return
      // inside the repository, so that the bundle's `import ssh2` finds node_modules
      mkdirSync(join(ROOT, 'node_modules', '.cache'), {recursive: true})
      bundle = join(ROOT, 'node_modules', '.cache', `ssh-keys-test-${process.pid}.mjs`)
      await build({
        stdin: {
          contents: `import {loadOrCreateSshIdentity} from './src/container/ssh-keys.ts'
            try { const id = await loadOrCreateSshIdentity(JSON.parse(process.argv[2])); console.log(JSON.stringify({path: id.privateKeyPath})) }
            catch (e) { console.log(JSON.stringify({code: e.code, exit: e.exit})) }`,
          resolveDir: ROOT,
          loader: 'ts',
        },
        bundle: true,
        platform: 'node',
        format: 'esm',
        outfile: bundle,
        external: ['ssh2'],
        logLevel: 'silent',
      })
      chmodSync(bundle, 0o644)
    })

    afterEach(() => {
      if (bundle) rmSync(bundle, {force: true})
    })

    const asNobody = (stateDir: string) => {
      const r = spawnSync(
        'runuser',
        ['-u', 'nobody', '--', process.execPath, bundle, JSON.stringify({trust: SANDBOX, userDir: stateDir, homeDir: join(base, 'nohome')})],
        {
          encoding: 'utf8',
          cwd: base,
        },
      )
      if (r.status !== 0) throw new Error(r.stderr)
      return JSON.parse(r.stdout.trim()) as {path?: string; code?: string; exit?: number}
    }

    const rootIt = isRoot ? it : it.skip

    rootIt("keeps their own key beside the first user's", async () => {
      await loadOrCreateSshIdentity({trust: SANDBOX, userDir: mine(), homeDir: home})
      const theirs = join(state, 'users', String(nobody))
      const result = asNobody(theirs)
      expect(result.path).toBe(join(theirs, 'ssh', 'id_ed25519'))
      expect(statSync(theirs).uid).toBe(nobody)
      expect(modeOf(theirs)).toBe(0o700)
      expect(modeOf(result.path!)).toBe(0o600)
      expect(modeOf(mine())).toBe(0o700)
    })

    rootIt('is told how to open a users/ that an older version left private to someone else', async () => {
      await loadOrCreateSshIdentity({trust: SANDBOX, userDir: mine(), homeDir: home})
      chmodSync(join(state, 'users'), 0o700)
      chownSync(join(state, 'users'), 1, 1)
      const result = asNobody(join(state, 'users', String(nobody)))
      expect(result).toEqual({code: 'STATE_DIR_NOT_SHARED', exit: 4})
      expect(modeOf(join(state, 'users'))).toBe(0o700)
    })
  })

  it('keeps wrapping other failures as SSH_KEY_UNAVAILABLE', async () => {
    const blocked = join(base, 'file')
    spawnSync('touch', [blocked])
    await expect(loadOrCreateSshIdentity({trust: SANDBOX, userDir: join(blocked, 'users', '1'), homeDir: home})).rejects.toEqual(
      expect.objectContaining({code: 'SSH_KEY_UNAVAILABLE', exit: 5}),
    )
  })
})
