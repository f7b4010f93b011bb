/** Mount sources and public keys as the caller sees them: a real setpriv to `nobody` (tests run as root in CI). */
import {spawnSync} from 'node:child_process'
import {chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {callerPublicKeys, resolveMountsAsCaller} from '../../../src/container/caller-files.js'
import {LocalExecutor} from '../../../src/core/local-executor.js'

const NOBODY = {uid: 65534, gid: 65534, user: 'nobody'}
const canRun = process.getuid?.() === 0 && spawnSync('sh', ['-c', 'command -v setpriv && getent passwd 65534']).status === 0
const maybe = canRun ? it : it.skip
const executor = new LocalExecutor()
let dir: string
let mine: string
let secret: string

beforeEach(() => {
  dir = mkdtempSync('/tmp/gc-caller-')
  chmodSync(dir, 0o755)
  mine = join(dir, 'mine')
  mkdirSync(mine)
  chownSync(mine, NOBODY.uid, NOBODY.gid)
  secret = join(dir, 'secret')
  mkdirSync(secret, {mode: 0o700})
  writeFileSync(join(secret, 'key'), 'root only\n', {mode: 0o600})
})
afterEach(() => rmSync(dir, {recursive: true, force: true}))

describe('mounts resolved as the caller', () => {
  maybe('takes a folder the caller owns, and resolves a link the caller made to it', async () => {
    const link = join(dir, 'link')
    symlinkSync(mine, link)
    expect(await resolveMountsAsCaller({workspace: link, volumes: [`${mine}:/data:ro`]}, NOBODY, executor)).toEqual({
      workspace: mine,
      volumes: [`${mine}:/data:ro`],
    })
  })

  maybe.each([
    ['a folder root keeps private', () => ({workspace: join(dir, 'secret'), volumes: []})],
    ['a link to it', () => (symlinkSync(join(dir, 'secret'), join(dir, 'mine', 'to-secret')), {workspace: join(dir, 'mine', 'to-secret'), volumes: []})],
    ['a read-write mount of a folder the caller may only read', () => ({workspace: mine, volumes: ['/usr/share:/x']})],
    ['a file root keeps private, read-only', () => ({workspace: mine, volumes: [`${join(dir, 'secret', 'key')}:/k:ro`]})],
    ['a path that does not exist', () => ({workspace: join(dir, 'nope'), volumes: []})],
  ])('refuses %s', async (_what, mounts) => {
    await expect(resolveMountsAsCaller(mounts(), NOBODY, executor)).rejects.toMatchObject({code: 'MOUNT_NOT_ALLOWED', exit: 4})
  })

  maybe('refuses a named Docker volume', async () => {
    await expect(resolveMountsAsCaller({workspace: mine, volumes: ['shared-vol:/x']}, NOBODY, executor)).rejects.toMatchObject({code: 'BAD_VOLUME'})
  })
})

describe("the caller's public keys", () => {
  maybe('are read as the caller: a link to a file of root’s reads nothing', async () => {
    mkdirSync(join(mine, '.ssh'))
    symlinkSync(join(dir, 'secret', 'key'), join(mine, '.ssh', 'id_ed25519.pub'))
    expect(await callerPublicKeys(NOBODY, mine, executor)).toEqual([])
  })

  maybe('keeps public key lines and drops anything else', async () => {
    mkdirSync(join(mine, '.ssh', 'gpu-cosplay'), {recursive: true})
    writeFileSync(join(mine, '.ssh', 'id_ed25519.pub'), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey me@here\nnot a key\n')
    writeFileSync(join(mine, '.ssh', 'gpu-cosplay', 'client_ed25519.pub'), 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOther gpu-cosplay\n')
    chownSync(join(mine, '.ssh'), NOBODY.uid, NOBODY.gid)
    expect(await callerPublicKeys(NOBODY, mine, executor)).toEqual([
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKey me@here',
      'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOther gpu-cosplay',
    ])
  })
})
