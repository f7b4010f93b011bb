import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {isCosplayError} from '../../../src/core/errors.js'
import {parseListGpus} from '../../../src/host/parse-list-gpus.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

type Row = {
  file: string
  gpus: Array<[number, string]>
  /** [gpuIndex, deviceIndex, profileName] per MIG line */
  devices: Array<[number, number, string]>
  firstMigUuid: string
}

const rows: Row[] = [
  {
    file: 'a100-sxm4-40gb__L-mig-r450-style.txt',
    gpus: [[0, 'A100-SXM4-40GB']],
    devices: [
      [0, 0, '3g.20gb'],
      [0, 1, '3g.20gb'],
    ],
    firstMigUuid: 'MIG-c7384736-a75d-5afc-978f-d2f1294409fd',
  },
  {
    file: 'a30__L-mig-3-devices.txt',
    gpus: [[0, 'NVIDIA A30']],
    devices: [
      [0, 0, '2g.12gb'],
      [0, 1, '1g.6gb'],
      [0, 2, '1g.6gb'],
    ],
    firstMigUuid: 'MIG-1b8509c0-e60d-502d-8263-d434867998aa',
  },
  {
    file: 'h100-pcie-80gb__L-mig.txt',
    gpus: [[0, 'NVIDIA H100 PCIe']],
    devices: [
      [0, 0, '3g.40gb'],
      [0, 1, '1g.10gb'],
      [0, 2, '1g.10gb'],
      [0, 3, '1g.10gb'],
    ],
    firstMigUuid: 'MIG-da06d78f-7534-56a0-a062-62fef012be91',
  },
  {
    file: 'h100-sxm-80gb__L-mig-r570-ci-sharing.txt',
    gpus: [[0, 'NVIDIA H100 80GB HBM3']],
    devices: [
      [0, 0, '1c.3g.40gb'],
      [0, 1, '1c.3g.40gb'],
      [0, 2, '1c.3g.40gb'],
      [0, 3, '1g.10gb'],
      [0, 4, '1g.10gb'],
    ],
    firstMigUuid: 'MIG-c788539f-c1ea-5a36-8b4d-9b07d024b1bb',
  },
]

describe('parseListGpus', () => {
  test.each(rows)('$file', ({file, gpus, devices, firstMigUuid}) => {
    const listed = parseListGpus(fixture(file))
    expect(listed.gpus.map((gpu) => [gpu.index, gpu.name])).toEqual(gpus)
    expect(listed.gpus.every((gpu) => /^GPU-[0-9a-f-]{36}$/.test(gpu.uuid))).toBe(true)
    expect(listed.migDevices.map((device) => [device.gpuIndex, device.deviceIndex, device.profileName])).toEqual(devices)
    expect(listed.migDevices[0].uuid).toBe(firstMigUuid)
  })

  test('a100-sxm4-40gb-x8__L-mig-r470-docs-indent-damaged.txt: eight GPUs, MIG lines assigned to the GPU above', () => {
    const listed = parseListGpus(fixture('a100-sxm4-40gb-x8__L-mig-r470-docs-indent-damaged.txt'))
    expect(listed.gpus.map((gpu) => gpu.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
    expect(listed.migDevices).toHaveLength(26)
    expect(listed.migDevices.filter((device) => device.gpuIndex === 0)).toHaveLength(7)
    expect(listed.migDevices.filter((device) => device.gpuIndex === 6).map((device) => device.profileName)).toEqual(['1c.7g.40gb', '2c.7g.40gb', '3c.7g.40gb'])
    expect(listed.migDevices.at(-1)).toEqual({
      gpuIndex: 7,
      deviceIndex: 2,
      profileName: '1g.5gb',
      uuid: 'MIG-83e71a6c-f0c3-5dfc-8577-6e8b17885e1f',
    })
  })

  const h100 = fixture('h100-pcie-80gb__L-mig.txt')
  test.each([
    {what: 'garbage', text: '\u001b[?25l%%%% NVML ????? GPU 0x7f3a: <binary>\nsegmentation? MIG 9g.999gb  ID -1  7/0\n'},
    {what: 'nothing', text: ''},
    {what: 'a GPU line cut off', text: h100.replace(/\(UUID: GPU-7cd6d4d6.*\)/, '(UUID: GPU-7cd6')},
    {what: 'a MIG line in a format not known', text: h100.replace('Device  1:', 'Dev#1:')},
    {what: 'a MIG line without its GPU', text: h100.split('\n').slice(1).join('\n')},
  ])('$what: SMI_UNPARSEABLE (exit 3), never an empty or partial list', ({text}) => {
    let error: unknown = null
    try {
      parseListGpus(text)
    } catch (caught) {
      error = caught
    }
    expect(isCosplayError(error) && [error.code, error.exit]).toEqual(['SMI_UNPARSEABLE', 3])
    expect((error as Error).message).toMatch(/^nvidia-smi -L printed something this version cannot read: .* \(\d+ bytes?\)$|no output$/)
  })

  test('lines that are no entry (a driver warning) are passed over', () => {
    const listed = parseListGpus(`Unable to determine the device handle for GPU0000:9A:00.0: Unknown Error\n${fixture('a30__L-mig-3-devices.txt')}`)
    expect(listed.gpus.map((gpu) => gpu.index)).toEqual([0])
    expect(listed.migDevices).toHaveLength(3)
  })
})
