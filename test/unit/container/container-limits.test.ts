/** A member's container limits on a shared box: the configuration's, its defaults, and what docker create gets. */
import {chmodSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {memberContainerLimits} from '../../../src/container/container-limits.js'
import {containerCreateOptions} from '../../../src/container/runtime.js'
import {type BoxConfig, CONTAINER_LIMIT_DEFAULTS, containerLimitsOf} from '../../../src/core/box-config.js'
import {readBoxConfig} from '../../../src/core/read-box-config.js'

const GIB = 1024 ** 3
const box = (extra: Partial<BoxConfig> = {}): BoxConfig => ({
  version: 1,
  group: 'gpu-cosplay',
  stateDir: '/var/lib/gpu-cosplay',
  nvidiaSmi: '/usr/bin/nvidia-smi',
  mpsControl: null,
  engine: '/usr/local/libexec/gpu-cosplay/engine',
  allowContainerSudo: false,
  ...extra,
})

describe("a member's container limits", () => {
  it('default to 64 GiB of memory, 8192 processes and 16 GiB of /dev/shm on a box that says nothing', () => {
    expect(CONTAINER_LIMIT_DEFAULTS).toEqual({containerMemory: '64g', containerPids: 8192, shmSizeMax: '16g'})
    expect(containerLimitsOf(box())).toEqual({memoryBytes: 64 * GIB, pidsLimit: 8192, shmSizeMaxBytes: 16 * GIB})
  })

  it('take the configuration, where null is no limit', () => {
    expect(containerLimitsOf(box({containerMemory: '8g', containerPids: 512, shmSizeMax: '2g'}))).toEqual({
      memoryBytes: 8 * GIB,
      pidsLimit: 512,
      shmSizeMaxBytes: 2 * GIB,
    })
    expect(containerLimitsOf(box({containerMemory: null, containerPids: null, shmSizeMax: null}))).toEqual({
      memoryBytes: null,
      pidsLimit: null,
      shmSizeMaxBytes: null,
    })
  })

  it('refuse an --shm-size over the ceiling (exit 4), and allow one at it', () => {
    expect(() => memberContainerLimits(box({shmSizeMax: '2g'}), 3 * GIB)).toThrow(expect.objectContaining({code: 'SHM_SIZE_NOT_ALLOWED', exit: 4}))
    expect(() => memberContainerLimits(box(), 1024 ** 4)).toThrow(expect.objectContaining({code: 'SHM_SIZE_NOT_ALLOWED', exit: 4}))
    expect(memberContainerLimits(box({shmSizeMax: '2g'}), 2 * GIB).shmSizeMaxBytes).toBe(2 * GIB)
    expect(memberContainerLimits(box({shmSizeMax: null}), 1024 ** 4).shmSizeMaxBytes).toBeNull()
  })

  it('reach docker create as Memory (swap included), PidsLimit and ShmSize; none without limits', () => {
    const spec = {name: 'c', image: 'sha256:x', labels: {}, env: {}, deviceIds: null, shmSizeBytes: GIB}
    expect(containerCreateOptions({...spec, memoryBytes: 64 * GIB, pidsLimit: 8192}).HostConfig).toMatchObject({
      Memory: 64 * GIB,
      MemorySwap: 64 * GIB,
      PidsLimit: 8192,
      ShmSize: GIB,
    })
    const bare = containerCreateOptions(spec).HostConfig!
    for (const key of ['Memory', 'MemorySwap', 'PidsLimit']) expect(bare).not.toHaveProperty(key)
  })

  it('are read from the configuration file, and a bad one is refused', () => {
    const dir = mkdtempSync('/tmp/gc-limits-')
    try {
      const write = (name: string, extra: string) => {
        const file = join(dir, name)
        writeFileSync(
          file,
          `version: 1\ngroup: gpu-cosplay\nstateDir: /var/lib/gpu-cosplay\nnvidiaSmi: /usr/bin/nvidia-smi\nmpsControl: null\nengine: /usr/local/libexec/gpu-cosplay/engine\nallowContainerSudo: false\n${extra}`,
        )
        chmodSync(file, 0o644)
        return file
      }
      expect(readBoxConfig(write('ok.yaml', 'containerMemory: 32g\ncontainerPids: null\nshmSizeMax: 4g\n'))).toMatchObject({
        ok: true,
        config: {containerMemory: '32g', containerPids: null, shmSizeMax: '4g'},
      })
      expect(readBoxConfig(write('bad.yaml', 'containerMemory: lots\n'))).toMatchObject({ok: false})
      expect(readBoxConfig(write('zero.yaml', 'containerPids: 0\n'))).toMatchObject({ok: false})
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })
})
