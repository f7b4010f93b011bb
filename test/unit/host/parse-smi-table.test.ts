import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {parseSmiTable, type SmiTableGpu, type SmiTableMigDevice} from '../../../src/host/parse-smi-table.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

type GpuRow = {
  file: string
  width: number
  driverVersion: string | null
  count: number
  /** one GPU checked field by field */
  sample: SmiTableGpu
}

const g = (
  index: number,
  name: string,
  persistence: boolean | null,
  busId: string,
  powerCapW: number | null,
  memoryTotalMiB: number | null,
  migMode: SmiTableGpu['migMode'],
): SmiTableGpu => ({index, name, persistence, busId, powerCapW, memoryTotalMiB, migMode})

const gpuRows: GpuRow[] = [
  {
    file: 'a100-sxm4-40gb__nvidia-smi-i0-r450-partial.txt',
    width: 79,
    driverVersion: '450.80.02',
    count: 1,
    sample: g(0, 'A100-SXM4-40GB', false, '00000000:36:00.0', 400, 40537, 'disabled'),
  },
  {
    file: 'h100-pcie-80gb__nvidia-smi-i0-r525-mig-disabled-partial.txt',
    width: 79,
    driverVersion: '525.125.06',
    count: 1,
    sample: g(0, 'NVIDIA H100 PCIe', true, '00000000:01:00.0', 350, 81559, 'disabled'),
  },
  // nvidia-smi cut the name; the PCI domain is not 0 on Azure.
  {
    file: 'a100-pcie-80gb__nvidia-smi-mig-enabled-no-devices-r515.txt',
    width: 79,
    driverVersion: '515.86.01',
    count: 1,
    sample: g(0, 'NVIDIA A100 80G...', false, '00000001:00:00.0', 300, 81920, 'enabled'),
  },
  {
    file: 'a100-sxm4-80gb-x2__nvidia-smi-mixed-mig-partial-r510.txt',
    width: 79,
    driverVersion: '510.47.03',
    count: 2,
    sample: g(1, 'NVIDIA A100-SXM...', true, '00000000:41:00.0', 500, 81920, 'enabled'),
  },
  {
    file: 'a100-sxm4-80gb-x4__nvidia-smi.txt',
    width: 91,
    driverVersion: '555.42.02',
    count: 4,
    sample: g(3, 'NVIDIA A100-SXM4-80GB', true, '00000000:D4:00.0', 500, 81920, 'disabled'),
  },
  {
    file: 'gh200-480gb__nvidia-smi.txt',
    width: 91,
    driverVersion: '550.127.05',
    count: 1,
    sample: g(0, 'NVIDIA GH200 480GB', true, '00000000:DD:00.0', 700, 97871, 'disabled'),
  },
  {
    file: 'h100-nvl-94gb-x2__nvidia-smi.txt',
    width: 91,
    driverVersion: '550.54.14',
    count: 2,
    sample: g(1, 'NVIDIA H100 NVL', true, '00000000:AE:00.0', 310, 95830, 'disabled'),
  },
  {
    file: 'h100-sxm-80gb-x8__nvidia-smi.txt',
    width: 91,
    driverVersion: '565.57.01',
    count: 8,
    sample: g(7, 'NVIDIA H100 80GB HBM3', true, '00000000:DB:00.0', 700, 81559, 'disabled'),
  },
  {
    file: 'h100-sxm-80gb__nvidia-smi-mig-r580.txt',
    width: 91,
    driverVersion: '580.65.06',
    count: 1,
    sample: g(0, 'NVIDIA H100 80GB HBM3', false, '00000000:42:00.0', 700, 81559, 'enabled'),
  },
  {
    file: 'h200-sxm-141gb__nvidia-smi.txt',
    width: 91,
    driverVersion: '550.90.12',
    count: 1,
    sample: g(0, 'NVIDIA H200', true, '00000000:03:00.0', 700, 143771, 'disabled'),
  },
  // Consumer cards print N/A in the MIG M. cell.
  {
    file: 'rtx3090-x2__nvidia-smi.txt',
    width: 91,
    driverVersion: '560.35.03',
    count: 2,
    sample: g(0, 'NVIDIA GeForce RTX 3090', true, '00000000:41:00.0', 350, 24576, null),
  },
  {
    file: 'rtx4090-x8__nvidia-smi.txt',
    width: 91,
    driverVersion: '550.127.05',
    count: 8,
    sample: g(6, 'NVIDIA GeForce RTX 4090', true, '00000000:C1:00.0', 450, 24564, null),
  },
  {
    file: 'rtx5090__nvidia-smi.txt',
    width: 91,
    driverVersion: '570.124.06',
    count: 1,
    sample: g(0, 'NVIDIA GeForce RTX 5090', true, '00000000:02:00.0', 575, 32607, null),
  },
]

const m = (gpuInstanceId: number, computeInstanceId: number, deviceIndex: number, memoryTotalMiB: number, smCount: number): SmiTableMigDevice => ({
  gpuIndex: 0,
  gpuInstanceId,
  computeInstanceId,
  deviceIndex,
  memoryTotalMiB,
  smCount,
})

const migRows: Array<{file: string; devices: SmiTableMigDevice[]; processes: number}> = [
  // Two-line rows: the BAR1 line below each device must not become a device of its own.
  {file: 'a100-sxm4-40gb__nvidia-smi-mig-devices-with-bar1.txt', devices: [m(1, 0, 0, 20096, 42), m(2, 0, 1, 20096, 42)], processes: 2},
  // Three CIs share GI 1: the memory cell is printed once and merged across their rows.
  {
    file: 'a100-sxm4-40gb__nvidia-smi-mig-devices-shared-gi-3ci.txt',
    devices: [m(1, 0, 0, 20224, 14), m(1, 1, 1, 20224, 14), m(1, 2, 2, 20224, 14)],
    processes: 0,
  },
  {file: 'a100-sxm4-40gb__nvidia-smi-no-mig-devices-found.txt', devices: [], processes: 0},
  {file: 'a100-pcie-80gb__nvidia-smi-mig-enabled-no-devices-r515.txt', devices: [], processes: 0},
  // R580: "Shared Memory-Usage" header, wider memory cell.
  {file: 'h100-sxm-80gb__nvidia-smi-mig-r580.txt', devices: [m(1, 0, 0, 40448, 60), m(2, 0, 1, 40448, 60)], processes: 0},
]

describe('parseSmiTable: GPUs', () => {
  test.each(gpuRows)('$file ($width columns)', ({file, width, driverVersion, count, sample}) => {
    const text = fixture(file)
    expect(text.split('\n').find((line) => line.startsWith('+'))).toHaveLength(width)
    const table = parseSmiTable(text)
    expect(table.driverVersion).toBe(driverVersion)
    expect(table.gpus.map((gpu) => gpu.index)).toEqual([...Array(count).keys()])
    expect(table.gpus).toContainEqual(sample)
  })

  test('CUDA version is read from the banner', () => {
    expect(parseSmiTable(fixture('h100-sxm-80gb__nvidia-smi-mig-r580.txt')).cudaVersion).toBe('13.0')
    expect(parseSmiTable(fixture('a100-sxm4-40gb__nvidia-smi-i0-r450-partial.txt')).cudaVersion).toBe('11.0')
  })

  test('"No devices were found" yields no GPUs', () => {
    expect(parseSmiTable(fixture('t4__nvidia-smi-i-1-no-devices-found.txt')).gpus).toEqual([])
  })
})

describe('parseSmiTable: MIG devices and processes', () => {
  test.each(migRows)('$file', ({file, devices, processes}) => {
    const table = parseSmiTable(fixture(file))
    expect(table.migDevices).toEqual(devices)
    expect(table.processes).toHaveLength(processes)
  })

  test('process rows carry GI and CI IDs and a cut name', () => {
    const table = parseSmiTable(fixture('a100-sxm4-40gb__nvidia-smi-mig-devices-with-bar1.txt'))
    expect(table.processes).toEqual([
      {gpuIndex: 0, gpuInstanceId: 1, computeInstanceId: 0, pid: 6217, name: '...inux/release/BlackScholes', usedMiB: 253},
      {gpuIndex: 0, gpuInstanceId: 2, computeInstanceId: 0, pid: 6223, name: '...inux/release/BlackScholes', usedMiB: 253},
    ])
  })

  test('process rows without MIG show N/A for GI and CI', () => {
    // Shape of a non-MIG row on R550+ (91 columns); no capture in fixtures/ has one.
    const text = [
      '+-----------------------------------------------------------------------------------------+',
      '| Processes:                                                                              |',
      '|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |',
      '|        ID   ID                                                               Usage      |',
      '|=========================================================================================|',
      '|    0   N/A  N/A    123456      C   python3 train.py                            1234MiB |',
      '|    1   N/A  N/A      2345    C+G   /usr/bin/Xorg                                  N/A  |',
      '+-----------------------------------------------------------------------------------------+',
    ].join('\n')
    expect(parseSmiTable(text).processes).toEqual([
      {gpuIndex: 0, gpuInstanceId: null, computeInstanceId: null, pid: 123456, name: 'python3 train.py', usedMiB: 1234},
      {gpuIndex: 1, gpuInstanceId: null, computeInstanceId: null, pid: 2345, name: '/usr/bin/Xorg', usedMiB: null},
    ])
  })
})
