import {describe, expect, it} from '@jest/globals'

import {parseFitReport} from '../../../src/client/fit-report.js'
import {connectHost} from '../../../src/container/connect-host.js'
import {parseByteSize, parseEnvFlags, parseVolumeFlags} from '../../../src/container/container-flags.js'
import {containerUserName} from '../../../src/container/session-container.js'

describe('container flag parsing', () => {
  it.each([
    ['1g', 1024 ** 3],
    ['512m', 512 * 1024 ** 2],
    ['2GiB', 2 * 1024 ** 3],
    ['1048576', 1048576],
  ])('--shm-size %s', (text, bytes) => expect(parseByteSize(text)).toBe(bytes))

  it('refuses what is not a size, an env pair or a volume, with exit 2', () => {
    for (const bad of [
      () => parseByteSize('lots'),
      () => parseEnvFlags(['=x']),
      () => parseVolumeFlags(['/a'], '/'),
      () => parseVolumeFlags(['/a:rel'], '/'),
    ]) {
      expect(bad).toThrow(expect.objectContaining({exit: 2}))
    }
  })

  it('keeps = and spaces in env values, and makes volume host paths absolute', () => {
    expect(parseEnvFlags(['A=b=c d', 'B='])).toEqual({A: 'b=c d', B: ''})
    expect(parseVolumeFlags(['./data:/data:ro', 'named:/cache'], '/home/u')).toEqual(['/home/u/data:/data:ro', 'named:/cache'])
  })

  it('uses the host user name when the entrypoint accepts it, and localhost for wildcard binds', () => {
    expect(containerUserName('alice')).toBe('alice')
    expect(containerUserName('Alice.Smith')).toBe('cosplay')
    expect(connectHost('0.0.0.0')).toBe('127.0.0.1')
    expect(connectHost('10.0.0.5')).toBe('10.0.0.5')
  })
})

describe('fit report', () => {
  it('gives headroom or an OOM verdict per process and skips damaged lines', () => {
    const lines = [
      JSON.stringify({pid: 1, argv: ['a.py'], peakReservedBytes: 10, peakAllocatedBytes: 8, capBytes: 24, t: 0}),
      '{not json',
      JSON.stringify({pid: 2, argv: ['b.py'], peakReservedBytes: 30, peakAllocatedBytes: 29, capBytes: 24, t: 0}),
    ].join('\n')
    const r = parseFitReport('/x/fit.jsonl', lines)
    expect(r.rows.map((row) => [row.pid, row.fits, row.headroomBytes])).toEqual([
      [1, true, 14],
      [2, false, -6],
    ])
    expect(r.skippedLines).toBe(1)
  })
})

/** a T4 session on an H200 slice, as the container step sees it */
async function t4Session() {
  const {containerPrivileges} = await import('../../../src/container/container-privileges.js')
  const {planCosplay} = await import('../../../src/plan/plan-cosplay.js')
  const {planHostFromModel} = await import('../../../src/plan/plan-host.js')
  const {target, hostModel} = await import('../plan/catalog-for-tests.js')
  const plan = planCosplay(target('t4'), planHostFromModel(hostModel('h200')))
  const session = {name: 's', owner: {uid: 1234, user: 'alice'}, target: {key: 't4', name: 'Tesla T4'}, plan, mig: {uuid: 'MIG-1'}} as never
  const live = {index: 0, uuid: 'GPU-1', memoryTotalMiB: 143771} as never
  return {containerPrivileges, plan, session, live}
}

describe('the container step as journaled', () => {
  const spec = async (env: Record<string, string>) => {
    const {containerSteps} = await import('../../../src/container/session-container.js')
    const {containerPrivileges, session, live} = await t4Session()
    const options = {
      image: {id: 'sha256:img', isCosplayImage: true, env: {}},
      imageRef: 'img',
      privileges: containerPrivileges({sudo: false, isCosplayImage: true, inEngine: false, owner: {uid: 1234, gid: 1234}}),
      owner: {uid: 1234, gid: 1234, user: 'alice'},
      authorizedKeys: ['ssh-ed25519 AAAA'],
      workspace: '/w',
      volumes: [],
      env,
      stateDir: '/state',
      pinned: null,
      privateOwner: null,
      sshPort: 2222,
      sshBind: '127.0.0.1',
      shmSizeBytes: null,
      hasTf32: false,
      packageRoot: '/pkg',
    } as never
    let applied: any = null
    const impl = {
      kind: 'start-container',
      describe: () => '',
      readPrior: async () => ({}),
      undo: async () => undefined,
      apply: async (_c: unknown, params: any) => ((applied = params), {}),
    }
    const [step] = containerSteps(options, {start: impl, stage: impl} as never)(session, live)
    await step.impl.apply({} as never, step.params, {})
    return {journaled: JSON.parse(JSON.stringify(step.params)), applied}
  }

  it("puts none of the user's --env values, names or their list into the container's environment", async () => {
    const {containerCreateOptions} = await import('../../../src/container/runtime.js')
    const hostile = {
      API_TOKEN: 'hunter2',
      PATH: '/workspace/evil:/usr/bin',
      BASH_ENV: '/workspace/x.sh',
      ENV: '/workspace/x.sh',
      LD_PRELOAD: '/workspace/x.so',
      GPU_COSPLAY_USER: 'mallory',
    }
    const {applied} = await spec(hostile)
    const created = containerCreateOptions(applied.spec)
    const names = (created.Env ?? []).map((e: string) => e.slice(0, e.indexOf('=')))
    for (const name of ['API_TOKEN', 'PATH', 'BASH_ENV', 'ENV', 'LD_PRELOAD', 'GPU_COSPLAY_USER_ENV_NAMES']) expect(names).not.toContain(name)
    expect((created.Env ?? []).join('\n')).not.toMatch(/hunter2|\/workspace\/|mallory/)
    // the tool's own value stays
    expect(created.Env).toContain('GPU_COSPLAY_USER=alice')
  })

  it('journals the values as "(not recorded)" and hands the real ones to the step, for the session\'s private file', async () => {
    const {REDACTED} = await import('../../../src/container/session-container.js')
    const {journaled, applied} = await spec({API_TOKEN: 'hunter2'})
    expect(JSON.stringify(journaled)).not.toContain('hunter2')
    expect(journaled.userEnv).toEqual({file: '/state/users/1234/s.env', owner: null, values: {API_TOKEN: REDACTED}})
    expect(applied.userEnv.values).toEqual({API_TOKEN: 'hunter2'})
    // the container is made from the image's ID; the journal names the image as the user did
    expect(journaled.spec.image).toBe('sha256:img')
    expect(journaled.imageRef).toBe('img')
  })

  it('keeps no file for a session without --env values', async () => {
    const {journaled} = await spec({})
    expect(journaled.userEnv).toBeUndefined()
  })
})

describe("a user's own image", () => {
  it("loads the costume from the hooks' site folder first on PYTHONPATH, keeping the image's own after it", async () => {
    const {containerSpecFor} = await import('../../../src/container/session-container.js')
    const {containerPrivileges, session, live} = await t4Session()
    const specFor = (image: {isCosplayImage: boolean; env: Record<string, string>}) =>
      containerSpecFor(session, live, {
        image: {id: 'sha256:img', ...image},
        imageRef: 'img',
        privileges: containerPrivileges({sudo: false, isCosplayImage: image.isCosplayImage, inEngine: true, owner: {uid: 1234, gid: 1234}}),
        owner: {uid: 1234, gid: 1234, user: 'alice'},
        authorizedKeys: [],
        workspace: '/w',
        volumes: [],
        env: {},
        sshPort: null,
        sshBind: '127.0.0.1',
        shmSizeBytes: null,
        hasTf32: false,
        packageRoot: '/pkg',
      } as never)
    expect(specFor({isCosplayImage: false, env: {PYTHONPATH: '/opt/lib'}}).env.PYTHONPATH).toBe('/opt/gpu-cosplay/hooks/site:/opt/lib')
    expect(specFor({isCosplayImage: false, env: {}}).env.PYTHONPATH).toBe('/opt/gpu-cosplay/hooks/site')
    // ours has the .pth in every python it found at build
    expect(specFor({isCosplayImage: true, env: {}}).env.PYTHONPATH).toBeUndefined()
  })
})
