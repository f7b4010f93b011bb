import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {parseSmiQuery, type SmiQueryGpu} from '../../../src/host/parse-smi-query.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

type Row = {
  file: string
  driverVersion: string
  cudaVersion: string
  count: number
  /** the GPU at sampleIndex, compared on the fields listed */
  sampleIndex: number
  sample: Partial<SmiQueryGpu>
}

const disabled = {current: 'disabled', pending: 'disabled'} as const

const rows: Row[] = [
  {
    file: 'h200-sxm-141gb__nvidia-smi-a.txt',
    driverVersion: '550.90.12',
    cudaVersion: '12.4',
    count: 1,
    sampleIndex: 0,
    sample: {
      name: 'NVIDIA H200',
      uuid: 'GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732',
      busId: '00000000:03:00.0',
      persistenceMode: true,
      migMode: disabled,
      power: {currentW: 700, requestedW: 700, defaultW: 700, minW: 200, maxW: 700},
      clocks: {maxGraphicsMHz: 1980, currentGraphicsMHz: 345},
      memoryTotalMiB: 143771,
      processes: [],
      unavailable: [],
    },
  },
  {
    file: 'h100-sxm-80gb-x8__nvidia-smi-a.txt',
    driverVersion: '565.57.01',
    cudaVersion: '12.7',
    count: 8,
    sampleIndex: 0,
    sample: {
      name: 'NVIDIA H100 80GB HBM3',
      uuid: 'GPU-b42dd28e-ffdd-8720-1df0-98bd8cdc05b1',
      busId: '00000000:18:00.0',
      migMode: disabled,
      power: {currentW: 700, requestedW: 700, defaultW: 700, minW: 200, maxW: 700},
      clocks: {maxGraphicsMHz: 1980, currentGraphicsMHz: 345},
      memoryTotalMiB: 81559,
      unavailable: [],
    },
  },
  {
    file: 'a100-sxm4-80gb-x4__nvidia-smi-a.txt',
    driverVersion: '555.42.02',
    cudaVersion: '12.5',
    count: 4,
    sampleIndex: 1,
    sample: {
      name: 'NVIDIA A100-SXM4-80GB',
      uuid: 'GPU-72d87681-01db-370e-567d-41afcf20fad0',
      busId: '00000000:9E:00.0',
      power: {currentW: 500, requestedW: 500, defaultW: 500, minW: 100, maxW: 500},
      clocks: {maxGraphicsMHz: 1410, currentGraphicsMHz: 210},
      memoryTotalMiB: 81920,
    },
  },
  // Grace Hopper: "Module Power Readings" (1000 W, the whole module) must not win over "GPU Power Readings".
  {
    file: 'gh200-480gb__nvidia-smi-a.txt',
    driverVersion: '550.127.05',
    cudaVersion: '12.4',
    count: 1,
    sampleIndex: 0,
    sample: {
      name: 'NVIDIA GH200 480GB',
      busId: '00000000:DD:00.0',
      power: {currentW: 700, requestedW: 900, defaultW: 900, minW: 100, maxW: 900},
      memoryTotalMiB: 97871,
    },
  },
  {
    file: 'h100-nvl-94gb-x2__nvidia-smi-a.txt',
    driverVersion: '550.54.14',
    cudaVersion: '12.4',
    count: 2,
    sampleIndex: 1,
    sample: {
      name: 'NVIDIA H100 NVL',
      uuid: 'GPU-db6d02a2-1413-eccf-8a17-d99eac29d365',
      busId: '00000000:AE:00.0',
      power: {currentW: 310, requestedW: 310, defaultW: 310, minW: 200, maxW: 400},
      clocks: {maxGraphicsMHz: 1785, currentGraphicsMHz: 345},
      memoryTotalMiB: 95830,
    },
  },
  // MIG Mode N/A on GeForce: null, and named as unavailable.
  {
    file: 'rtx4090-x8__nvidia-smi-a.txt',
    driverVersion: '550.127.05',
    cudaVersion: '12.4',
    count: 8,
    sampleIndex: 7,
    sample: {
      name: 'NVIDIA GeForce RTX 4090',
      busId: '00000000:E1:00.0',
      migMode: null,
      power: {currentW: 450, requestedW: 450, defaultW: 450, minW: 150, maxW: 450},
      clocks: {maxGraphicsMHz: 3105, currentGraphicsMHz: 210},
      memoryTotalMiB: 24564,
      unavailable: ['migMode'],
    },
  },
  // Pre-R545 keys: "Power Readings" with "Power Limit" (requested) and "Enforced Power Limit" (current).
  {
    file: 't4__nvidia-smi-q-r530.txt',
    driverVersion: '530.30.02',
    cudaVersion: '12.1',
    count: 1,
    sampleIndex: 0,
    sample: {
      name: 'Tesla T4',
      uuid: 'GPU-c1d02d08-2915-752a-ef58-a46a0718a45d',
      busId: '00000000:00:08.0',
      persistenceMode: true,
      migMode: null,
      power: {currentW: 70, requestedW: 70, defaultW: 70, minW: 60, maxW: 70},
      clocks: {maxGraphicsMHz: 1590, currentGraphicsMHz: 300},
      memoryTotalMiB: 15360,
      processes: [{gpuIndex: 0, pid: 25384, gpuInstanceId: null, computeInstanceId: null, name: 'nvidia-cuda-mps-server', usedMiB: 26}],
      unavailable: ['migMode'],
    },
  },
  // R595, key column widened: current 500 W was set below the requested 700 W, and the two must not be confused.
  {
    file: 'hopper-700w-x4__q-d-power-r595-partial.txt',
    driverVersion: '595.71.05',
    cudaVersion: '13.2',
    count: 1,
    sampleIndex: 0,
    sample: {
      busId: '00000000:06:00.0',
      name: null,
      power: {currentW: 500, requestedW: 700, defaultW: 700, minW: 200, maxW: 700},
      unavailable: ['name', 'uuid', 'persistenceMode', 'migMode', 'clocks.maxGraphicsMHz', 'clocks.currentGraphicsMHz', 'memoryTotalMiB', 'processes'],
    },
  },
  {
    file: 'laptop-gpu__q-d-power-r590-partial.txt',
    driverVersion: '590.48.01',
    cudaVersion: '13.1',
    count: 1,
    sampleIndex: 0,
    sample: {
      busId: '00000000:01:00.0',
      power: {currentW: 35, requestedW: 35, defaultW: 35, minW: 5, maxW: 95},
    },
  },
  {
    file: 'h200-sxm-141gb-x8__q-d-CLOCK-partial.txt',
    driverVersion: '550.90.07',
    cudaVersion: '12.4',
    count: 1,
    sampleIndex: 0,
    sample: {
      busId: '00000000:53:00.0',
      clocks: {maxGraphicsMHz: 1980, currentGraphicsMHz: 345},
      power: {currentW: null, requestedW: null, defaultW: null, minW: null, maxW: null},
    },
  },
  {
    file: 't4__nvidia-smi-q-d-MEMORY.txt',
    driverVersion: '530.30.02',
    cudaVersion: '12.1',
    count: 1,
    sampleIndex: 0,
    sample: {
      busId: '00000000:00:08.0',
      memoryTotalMiB: 15360,
      persistenceMode: null,
    },
  },
]

describe('parseSmiQuery', () => {
  test.each(rows)('$file', ({file, driverVersion, cudaVersion, count, sampleIndex, sample}) => {
    const query = parseSmiQuery(fixture(file))
    expect(query.driverVersion).toBe(driverVersion)
    expect(query.cudaVersion).toBe(cudaVersion)
    expect(query.gpus).toHaveLength(count)
    expect(query.gpus.map((gpu) => gpu.index)).toEqual([...Array(count).keys()])
    expect(query.gpus[sampleIndex]).toMatchObject(sample)
  })

  test('the 8-GPU capture keeps every bus ID in output order', () => {
    const query = parseSmiQuery(fixture('h100-sxm-80gb-x8__nvidia-smi-a.txt'))
    expect(query.attachedGpus).toBe(8)
    expect(query.gpus.map((gpu) => gpu.busId.slice(9, 11))).toEqual(['18', '2A', '3A', '5D', '9A', 'AB', 'BA', 'DB'])
    expect(new Set(query.gpus.map((gpu) => gpu.uuid)).size).toBe(8)
  })

  test('a partial -q -d output notes every field it lacks', () => {
    const [gpu] = parseSmiQuery(fixture('h200-sxm-141gb-x8__q-d-CLOCK-partial.txt')).gpus
    expect(gpu.unavailable).toEqual(expect.arrayContaining(['name', 'uuid', 'power.currentW', 'power.requestedW', 'memoryTotalMiB']))
    expect(gpu.unavailable).not.toContain('clocks.maxGraphicsMHz')
  })

  test('bracketed and permission placeholders read as unavailable', () => {
    const text = [
      'Driver Version                            : 550.90.12',
      'CUDA Version                              : 12.4',
      'Attached GPUs                             : 1',
      'GPU 00000000:03:00.0',
      '    Product Name                          : NVIDIA H200',
      '    Persistence Mode                      : [Insufficient Permissions]',
      '    GPU Power Readings',
      '        Current Power Limit               : [N/A]',
      '        Requested Power Limit             : Not Found',
      '        Default Power Limit               : 700.00 W',
      '    Processes                             : None',
    ].join('\n')
    const [gpu] = parseSmiQuery(text).gpus
    expect(gpu.persistenceMode).toBeNull()
    expect(gpu.power).toEqual({currentW: null, requestedW: null, defaultW: 700, minW: null, maxW: null})
    expect(gpu.unavailable).toEqual(expect.arrayContaining(['persistenceMode', 'power.currentW', 'power.requestedW']))
    expect(gpu.processes).toEqual([])
  })

  test('MIG processes on current drivers carry GI and CI IDs', () => {
    const text = [
      'GPU 00000000:18:00.0',
      '    MIG Mode',
      '        Current                           : Enabled',
      '        Pending                           : Enabled',
      '    Processes',
      '        GPU instance ID                   : 7',
      '        Compute instance ID               : 0',
      '        Process ID                        : 4242',
      '            Type                          : C',
      '            Name                          : python3',
      '            Used GPU Memory               : 1024 MiB',
      '        GPU instance ID                   : 8',
      '        Compute instance ID               : 0',
      '        Process ID                        : 4343',
      '            Type                          : C',
      '            Name                          : /usr/bin/python3 -m vllm',
      '            Used GPU Memory               : 2048 MiB',
    ].join('\n')
    const [gpu] = parseSmiQuery(text).gpus
    expect(gpu.migMode).toEqual({current: 'enabled', pending: 'enabled'})
    expect(gpu.processes).toEqual([
      {gpuIndex: 0, pid: 4242, gpuInstanceId: 7, computeInstanceId: 0, name: 'python3', usedMiB: 1024},
      {gpuIndex: 0, pid: 4343, gpuInstanceId: 8, computeInstanceId: 0, name: '/usr/bin/python3 -m vllm', usedMiB: 2048},
    ])
  })

  test('text without GPU blocks yields no GPUs', () => {
    expect(parseSmiQuery('Segmentation fault\n').gpus).toEqual([])
  })
})
