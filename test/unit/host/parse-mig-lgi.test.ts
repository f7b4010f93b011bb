import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {parseMigLgi} from '../../../src/host/parse-mig-lgi.js'
import type {GpuInstance} from '../../../src/host/types.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

const gi = (gpuIndex: number, profileName: string, profileId: number, id: number, placementStart: number, placementSize: number): GpuInstance => ({
  gpuIndex,
  profileName,
  profileId,
  id,
  placementStart,
  placementSize,
})

type Row = {file: string; width: number; ids: number[]; sample: GpuInstance}

const rows: Row[] = [
  {file: 'a100-sxm4-40gb__mig-lgi.txt', width: 54, ids: [1, 2], sample: gi(0, '3g.20gb', 9, 2, 0, 4)},
  {file: 'a100-pcie-80gb__mig-lgi-2x3g40gb.txt', width: 57, ids: [1, 2], sample: gi(0, '3g.40gb', 9, 1, 4, 4)},
  {file: 'a100-or-h100-80gb-multi-gpu__mig-lgi-partial.txt', width: 57, ids: [9, 10, 3, 2, 13, 14, 5, 1], sample: gi(1, '3g.40gb', 9, 1, 4, 4)},
  {file: 'a30__mig-lgi-3-instances.txt', width: 57, ids: [3, 4, 2], sample: gi(0, '2g.12gb', 5, 2, 2, 2)},
  {file: 'a30__mig-lgi-4x1g6gb.txt', width: 57, ids: [3, 4, 5, 6], sample: gi(0, '1g.6gb', 14, 6, 3, 1)},
  {file: 'gh200-96gb__mig-lgi-7x1g12gb.txt', width: 57, ids: [7, 8, 9, 10, 11, 12, 13], sample: gi(0, '1g.12gb', 19, 13, 6, 1)},
  {file: 'h100-nvl-94gb__mig-lgi-2x3g47gb.txt', width: 57, ids: [1, 2], sample: gi(0, '3g.47gb', 9, 2, 4, 4)},
  {file: 'h100-pcie-80gb__mig-lgi.txt', width: 57, ids: [7, 8, 9, 2], sample: gi(0, '3g.40gb', 9, 2, 4, 4)},
  {file: 'h100-sxm-80gb__mig-lgi-7x1g10gb.txt', width: 57, ids: [7, 8, 9, 10, 11, 12, 13], sample: gi(0, '1g.10gb', 19, 10, 3, 1)},
  {file: 'h100-sxm-80gb__mig-lgi-wide-59col.txt', width: 59, ids: [3, 2], sample: gi(0, '2g.20gb', 14, 3, 0, 2)},
]

describe('parseMigLgi', () => {
  test.each(rows)('$file ($width columns)', ({file, width, ids, sample}) => {
    const text = fixture(file)
    expect(text.split('\n')[0]).toHaveLength(width)
    const instances = parseMigLgi(text)
    expect(instances.map((instance) => instance.id)).toEqual(ids)
    expect(instances).toContainEqual(sample)
  })

  test('a30__mig-lgi-no-gpu-instances-found.txt yields no instances', () => {
    expect(parseMigLgi(fixture('a30__mig-lgi-no-gpu-instances-found.txt'))).toEqual([])
  })

  test('a -lgip table is not read as instances', () => {
    expect(parseMigLgi(fixture('h100-sxm-80gb__mig-lgip.txt'))).toEqual([])
  })
})
