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

describe('the container step as journaled', () => {
  it("records the spec with the user's --env values redacted, and starts the container with the real ones", async () => {
    const {containerSteps, REDACTED} = await import('../../../src/container/session-container.js')
    const {containerPrivileges} = await import('../../../src/container/container-privileges.js')
    const {planCosplay} = await import('../../../src/plan/plan-cosplay.js')
    const {planHostFromModel} = await import('../../../src/plan/plan-host.js')
    const {target, hostModel} = await import('../plan/catalog-for-tests.js')
    const plan = planCosplay(target('t4'), planHostFromModel(hostModel('h200')))
    const session = {name: 's', target: {key: 't4', name: 'Tesla T4'}, plan, mig: {uuid: 'MIG-1'}} as never
    const live = {index: 0, uuid: 'GPU-1', memoryTotalMiB: 143771} as never
    const options = {
      image: {id: 'sha256:img', isCosplayImage: true, env: {}},
      imageRef: 'img',
      privileges: containerPrivileges({sudo: false, isCosplayImage: true, inEngine: false, owner: {uid: 1234, gid: 1234}}),
      owner: {uid: 1234, gid: 1234, user: 'alice'},
      authorizedKeys: ['ssh-ed25519 AAAA'],
      workspace: '/w',
      volumes: [],
      env: {API_TOKEN: 'hunter2', GPU_COSPLAY_USER: 'mallory'},
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
    const [step] = containerSteps(options, impl as never)(session, live)
    const recorded = JSON.parse(JSON.stringify(step.params)).spec
    expect(recorded.env.API_TOKEN).toBe(REDACTED)
    // the tool's own value wins over --env and stays readable for ssh/exec
    expect(recorded.env.GPU_COSPLAY_USER).toBe('alice')
    // the container is made from the image's ID; the journal names the image as the user did
    expect(recorded.image).toBe('sha256:img')
    expect(JSON.parse(JSON.stringify(step.params)).imageRef).toBe('img')
    await step.impl.apply({} as never, step.params, {})
    expect(applied.spec.env.API_TOKEN).toBe('hunter2')
  })
})
