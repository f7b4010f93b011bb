/**
 * How much root a session's container holds, as data: the privileges chosen for each case, what `docker create` gets
 * from them, and the `up --sudo` check against the box's configuration.
 */
import {describe, expect, it} from '@jest/globals'

import {assertContainerSudoAllowed, containerPrivileges, ENTRYPOINT_CAPABILITIES} from '../../../src/container/container-privileges.js'
import {containerCreateOptions} from '../../../src/container/runtime.js'
import {containerSpecFor} from '../../../src/container/session-container.js'
import type {BoxConfig} from '../../../src/core/box-config.js'
import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import {hostModel, target} from '../plan/catalog-for-tests.js'

const owner = {uid: 1234, gid: 1235}

describe('containerPrivileges', () => {
  it('by default: every capability dropped but the entrypoint and sshd ones, no-new-privileges, no sudo', () => {
    for (const inEngine of [false, true]) {
      expect(containerPrivileges({sudo: false, isCosplayImage: true, inEngine, owner})).toEqual({
        sudo: false,
        unprivileged: false,
        user: null,
        capDrop: ['ALL'],
        capAdd: ['CHOWN', 'SETUID', 'SETGID', 'SYS_CHROOT', 'AUDIT_WRITE'],
        noNewPrivileges: true,
        env: {GPU_COSPLAY_GRANT_SUDO: '0'},
      })
    }
  })

  it("outside the engine a user's own image keeps the root entrypoint, hardened the same way", () => {
    expect(containerPrivileges({sudo: false, isCosplayImage: false, inEngine: false, owner})).toMatchObject({
      unprivileged: false,
      user: null,
      capAdd: [...ENTRYPOINT_CAPABILITIES],
      noNewPrivileges: true,
    })
  })

  it("through the engine a user's own image runs as the user, with no capability at all", () => {
    expect(containerPrivileges({sudo: false, isCosplayImage: false, inEngine: true, owner})).toMatchObject({
      sudo: false,
      unprivileged: true,
      user: '1234:1235',
      capDrop: ['ALL'],
      capAdd: [],
      noNewPrivileges: true,
    })
  })

  it("--sudo: Docker's default capabilities, no no-new-privileges, and the entrypoint asked for the sudoers entry", () => {
    expect(containerPrivileges({sudo: true, isCosplayImage: true, inEngine: false, owner})).toEqual({
      sudo: true,
      unprivileged: false,
      user: null,
      capDrop: null,
      capAdd: null,
      noNewPrivileges: false,
      env: {GPU_COSPLAY_GRANT_SUDO: '1'},
    })
  })
})

describe('up --sudo is checked against the box', () => {
  const box = (allowContainerSudo: boolean): BoxConfig => ({
    version: 1,
    group: 'gpu',
    stateDir: '/var/lib/gpu-cosplay',
    nvidiaSmi: '/usr/bin/nvidia-smi',
    mpsControl: null,
    engine: '/usr/local/bin/gpu-cosplay-engine',
    allowContainerSudo,
  })

  it('outside the engine, or where the administrator allowed it, it passes', () => {
    expect(() => assertContainerSudoAllowed(null)).not.toThrow()
    expect(() => assertContainerSudoAllowed(box(true))).not.toThrow()
  })

  it('through an engine that does not allow it: a permission error naming the install option', () => {
    let thrown: any = null
    try {
      assertContainerSudoAllowed(box(false))
    } catch (error) {
      thrown = error
    }
    expect(thrown).toMatchObject({code: 'CONTAINER_SUDO_NOT_ALLOWED', exit: 4})
    expect(thrown.fix.join(' ')).toContain('gpu-cosplay system install --allow-container-sudo')
  })
})

describe('the container spec and what docker create gets', () => {
  const plan = planCosplay(target('t4'), planHostFromModel(hostModel('h200')))
  const session = {name: 's', target: {key: 't4', name: 'Tesla T4'}, plan, mig: {uuid: 'MIG-1'}} as never
  const live = {index: 0, uuid: 'GPU-1', memoryTotalMiB: 143771} as never
  const options = (isCosplayImage: boolean, privileges: ReturnType<typeof containerPrivileges>) =>
    ({
      image: {id: 'sha256:abc', isCosplayImage, env: {}},
      imageRef: 'gpu-cosplay:1.0.0',
      privileges,
      owner: {...owner, user: 'alice'},
      authorizedKeys: ['ssh-ed25519 AAAA'],
      workspace: '/w',
      volumes: [],
      env: {GPU_COSPLAY_GRANT_SUDO: '1'},
      sshPort: 0,
      sshBind: '127.0.0.1',
      shmSizeBytes: null,
      hasTf32: false,
      packageRoot: '/pkg',
    }) as never

  it('is created from the image ID, hardened, and an --env GPU_COSPLAY_GRANT_SUDO=1 asks the entrypoint for nothing', () => {
    const spec = containerSpecFor(session, live, options(true, containerPrivileges({sudo: false, isCosplayImage: true, inEngine: false, owner})))
    const created = containerCreateOptions(spec)
    expect(created.Image).toBe('sha256:abc')
    expect(created.User).toBeUndefined()
    expect(created.Env).toContain('GPU_COSPLAY_GRANT_SUDO=0')
    expect(created.HostConfig).toMatchObject({
      CapDrop: ['ALL'],
      CapAdd: ['CHOWN', 'SETUID', 'SETGID', 'SYS_CHROOT', 'AUDIT_WRITE'],
      SecurityOpt: ['no-new-privileges:true'],
    })
  })

  it('with --sudo leaves the capabilities and security options to Docker', () => {
    const spec = containerSpecFor(session, live, options(true, containerPrivileges({sudo: true, isCosplayImage: true, inEngine: false, owner})))
    const created = containerCreateOptions(spec)
    expect(created.Env).toContain('GPU_COSPLAY_GRANT_SUDO=1')
    for (const key of ['CapDrop', 'CapAdd', 'SecurityOpt']) expect(created.HostConfig).not.toHaveProperty(key)
  })

  it("runs a user's own image through the engine as the user: the shim mounted, MPS folders it can make", () => {
    const spec = containerSpecFor(session, live, options(false, containerPrivileges({sudo: false, isCosplayImage: false, inEngine: true, owner})))
    const created = containerCreateOptions(spec)
    expect(created.User).toBe('1234:1235')
    expect(created.HostConfig).toMatchObject({CapDrop: ['ALL'], CapAdd: [], SecurityOpt: ['no-new-privileges:true'], Init: true})
    expect(created.HostConfig!.Binds).toContain('/pkg/runtime-hooks/nvidia-smi:/opt/gpu-cosplay/bin/nvidia-smi:ro')
    expect(created.Entrypoint).toEqual(['/opt/gpu-cosplay/entrypoint.sh'])
    if (plan.mps) expect(created.Env).toContain('CUDA_MPS_PIPE_DIRECTORY=/tmp/gpu-cosplay/mps/pipe')
  })
})
