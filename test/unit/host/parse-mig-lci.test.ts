import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {parseMigLci} from '../../../src/host/parse-mig-lci.js'
import type {ComputeInstance} from '../../../src/host/types.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

const ci = (
  gpuIndex: number,
  gpuInstanceId: number,
  profileName: string,
  profileId: number,
  id: number,
  placementStart: number | null,
  placementSize: number | null,
): ComputeInstance => ({gpuIndex, gpuInstanceId, profileName, profileId, id, placementStart, placementSize})

type Row = {file: string; width: number; pairs: Array<[number, number]>; sample: ComputeInstance}

const rows: Row[] = [
  {file: 'a100-40gb__mig-lci-1g5gb.txt', width: 70, pairs: [[13, 0]], sample: ci(0, 13, '1g.5gb', 0, 0, 0, 1)},
  {
    file: 'a100-pcie-80gb__mig-lci-gi-1-2ci.txt',
    width: 70,
    pairs: [
      [1, 0],
      [1, 1],
    ],
    sample: ci(0, 1, '1c.3g.40gb', 0, 1, 1, 1),
  },
  // The old layout has no Placement column.
  {
    file: 'a100-sxm4-40gb__mig-lci-gi-1-old-format.txt',
    width: 57,
    pairs: [
      [1, 0],
      [1, 1],
      [1, 2],
    ],
    sample: ci(0, 1, '1c.3g.20gb', 0, 2, null, null),
  },
  {
    file: 'gh200-96gb__mig-lci-7x1g12gb.txt',
    width: 70,
    pairs: [
      [7, 0],
      [8, 0],
      [9, 0],
      [10, 0],
      [11, 0],
      [12, 0],
      [13, 0],
    ],
    sample: ci(0, 12, '1g.12gb', 0, 0, 0, 1),
  },
  {
    file: 'h100-sxm-80gb__mig-lci-2ci.txt',
    width: 70,
    pairs: [
      [3, 0],
      [2, 0],
    ],
    sample: ci(0, 2, '3g.40gb', 2, 0, 0, 4),
  },
  {
    file: 'h100-sxm-80gb__mig-lci-7x1g10gb.txt',
    width: 70,
    pairs: [
      [7, 0],
      [8, 0],
      [9, 0],
      [10, 0],
      [11, 0],
      [12, 0],
      [13, 0],
    ],
    sample: ci(0, 7, '1g.10gb', 0, 0, 0, 1),
  },
]

describe('parseMigLci', () => {
  test.each(rows)('$file ($width columns)', ({file, width, pairs, sample}) => {
    const text = fixture(file)
    expect(text.split('\n')[0]).toHaveLength(width)
    const instances = parseMigLci(text)
    expect(instances.map((instance) => [instance.gpuInstanceId, instance.id])).toEqual(pairs)
    expect(instances).toContainEqual(sample)
  })

  test.each(['a100-pcie-80gb__mig-lcip-gi-1.txt', 'a30__mig-lcip-gi-2.txt'])('the -lcip profile listing %s is not read as instances', (file) => {
    expect(parseMigLci(fixture(file))).toEqual([])
  })
})
