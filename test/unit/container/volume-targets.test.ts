/** --volume targets resolved in the image (a fake of Docker's archive stat: Debian's merged /usr and /var/run link). */
import {assertVolumeTargets, homeIn, resolveInImage, whyNotAllowed} from '../../../src/container/volume-targets.js'
import type {ImagePathStat, ImageProbe} from '../../../src/container/runtime.js'

/** An image of folders and links; a link's target is given as Docker states it (fully resolved). */
function image(entries: Record<string, string | null>, passwd = 'root:x:0:0:root:/root:/bin/bash\n'): ImageProbe & {stats: string[]} {
  const stats: string[] = []
  return {
    stats,
    async stat(p: string): Promise<ImagePathStat | null> {
      stats.push(p)
      if (!(p in entries)) return null
      return {name: p.split('/').pop()!, mode: 0, linkTarget: entries[p] ?? ''}
    },
    async readFile(p: string) {
      return p === '/etc/passwd' ? passwd : null
    },
  }
}

const DEBIAN = {
  '/bin': '/usr/bin',
  '/lib': '/usr/lib',
  '/lib64': '/usr/lib64',
  '/sbin': '/usr/sbin',
  '/usr': null,
  '/usr/lib': null,
  '/etc': null,
  '/var': null,
  '/var/run': '/run',
  '/run': null,
  '/home': null,
  '/opt': null,
  '/data': null,
  '/srv': '/etc',
  '/workspace': null,
  '/tmp': null,
}
const ALICE = {uid: 1301, name: 'alice'}

describe('a --volume target', () => {
  it.each([
    '/',
    '/etc',
    '/etc/ssh',
    '/usr/local/bin',
    '/bin',
    '/lib/x86_64-linux-gnu',
    '/lib64',
    '/opt',
    '/opt/gpu-cosplay',
    '/opt/gpu-cosplay/entrypoint.sh',
    '/run',
    '/var/run',
    '/var/run/sshd',
    '/var',
    '/root',
    '/tmp',
    '/tmp/gpu-cosplay',
    '/dev/shm',
    '/proc',
    '/workspace',
    '/workspace/data',
    '/home',
    '/home/alice',
    '/home/alice/.ssh',
    '/home/alice/.ssh/authorized_keys',
    '/srv',
    '/srv/x',
    '/data/../etc',
  ])('%s is refused (VOLUME_TARGET_NOT_ALLOWED, exit 4)', async (target) => {
    await expect(assertVolumeTargets(image(DEBIAN), [target], ALICE)).rejects.toMatchObject({code: 'VOLUME_TARGET_NOT_ALLOWED', exit: 4})
  })

  it.each(['/data', '/data/sets', '/mnt/x', '/home/alice/data', '/opt/models', '/tmp/cache', '/var/cache/pip', '/home/bob'])(
    '%s is allowed',
    async (target) => {
      await expect(assertVolumeTargets(image(DEBIAN), [target], ALICE)).resolves.toBeUndefined()
    },
  )

  it("is refused inside another volume's target, or at the same one", async () => {
    await expect(assertVolumeTargets(image(DEBIAN), ['/data', '/data/inner'], ALICE)).rejects.toMatchObject({code: 'VOLUME_TARGET_NOT_ALLOWED'})
    await expect(assertVolumeTargets(image(DEBIAN), ['/data', '/data'], ALICE)).rejects.toMatchObject({code: 'VOLUME_TARGET_NOT_ALLOWED'})
    await expect(assertVolumeTargets(image(DEBIAN), ['/data/a', '/data/b'], ALICE)).resolves.toBeUndefined()
  })

  it("guards the home the image's passwd gives the uid, through a link too", async () => {
    const passwd = 'root:x:0:0:root:/root:/bin/bash\nubuntu:x:1301:1301::/users/ubuntu:/bin/bash\n'
    const img = image({...DEBIAN, '/users': null, '/u': '/users'}, passwd)
    await expect(assertVolumeTargets(img, ['/users/ubuntu'], ALICE)).rejects.toMatchObject({code: 'VOLUME_TARGET_NOT_ALLOWED'})
    await expect(assertVolumeTargets(img, ['/u/ubuntu'], ALICE)).rejects.toMatchObject({code: 'VOLUME_TARGET_NOT_ALLOWED'})
    await expect(assertVolumeTargets(img, ['/users/ubuntu/data'], ALICE)).resolves.toBeUndefined()
    await expect(homeIn(img, {uid: 4242, name: 'ubuntu'})).resolves.toBe('/users/ubuntu')
    await expect(homeIn(img, {uid: 4242, name: 'carol'})).resolves.toBe('/home/carol')
  })

  it('looks at nothing without a volume', async () => {
    const img = image(DEBIAN)
    await assertVolumeTargets(img, [], ALICE)
    expect(img.stats).toEqual([])
  })
})

describe('resolution in the image', () => {
  it('follows links component by component, and keeps the rest literal once a component does not exist', async () => {
    await expect(resolveInImage(image(DEBIAN), '/var/run/x/y')).resolves.toBe('/run/x/y')
    await expect(resolveInImage(image(DEBIAN), '/srv/ssh')).resolves.toBe('/etc/ssh')
    await expect(resolveInImage(image(DEBIAN), '/nowhere/var/run')).resolves.toBe('/nowhere/var/run')
  })

  it('states why in words', () => {
    expect(whyNotAllowed('/', {trees: [], folders: [], others: []})).toBe('the whole container')
    expect(whyNotAllowed('/data', {trees: ['/etc'], folders: ['/home/a'], others: []})).toBeNull()
  })
})
