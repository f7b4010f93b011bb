import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {joinMigDevices} from '../../../src/host/join-mig-devices.js'
import {parseListGpus} from '../../../src/host/parse-list-gpus.js'
import {parseSmiTable} from '../../../src/host/parse-smi-table.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

describe('joinMigDevices', () => {
  test('each UUID gets the GI/CI of its device index, not of a GI with that number', () => {
    // Two captures from different machines, both "3 CIs sharing one GI, devices 0-2": only the join is under test.
    const listed = parseListGpus(fixture('h100-sxm-80gb__L-mig-r570-ci-sharing.txt'))
    const table = parseSmiTable(fixture('a100-sxm4-40gb__nvidia-smi-mig-devices-shared-gi-3ci.txt'))
    const joined = joinMigDevices(listed, table)
    expect(joined.map((device) => [device.deviceIndex, device.profileName, device.gpuInstanceId, device.computeInstanceId])).toEqual([
      [0, '1c.3g.40gb', 1, 0],
      [1, '1c.3g.40gb', 1, 1],
      [2, '1c.3g.40gb', 1, 2],
      // The table shows no device 3 or 4: they stay unjoined instead of guessed.
      [3, '1g.10gb', null, null],
      [4, '1g.10gb', null, null],
    ])
    expect(joined[1].uuid).toBe('MIG-405bbda1-6b05-535f-9702-f95e8cd170ce')
  })

  test('the R580 table joins with -L by MIG Dev', () => {
    const table = parseSmiTable(fixture('h100-sxm-80gb__nvidia-smi-mig-r580.txt'))
    const listed = parseListGpus(
      [
        'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-c08d91cb-e324-655c-71ba-7570956445bc)',
        '  MIG 3g.40gb     Device  0: (UUID: MIG-11111111-1111-5111-8111-111111111111)',
        '  MIG 3g.40gb     Device  1: (UUID: MIG-22222222-2222-5222-8222-222222222222)',
      ].join('\n'),
    )
    expect(joinMigDevices(listed, table)).toEqual([
      {gpuIndex: 0, deviceIndex: 0, profileName: '3g.40gb', uuid: 'MIG-11111111-1111-5111-8111-111111111111', gpuInstanceId: 1, computeInstanceId: 0},
      {gpuIndex: 0, deviceIndex: 1, profileName: '3g.40gb', uuid: 'MIG-22222222-2222-5222-8222-222222222222', gpuInstanceId: 2, computeInstanceId: 0},
    ])
  })
})
