import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {parseMigLgip} from '../../../src/host/parse-mig-lgip.js'
import type {MigProfile} from '../../../src/host/types.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

type Row = {
  file: string
  count: number
  names: string[]
  /** a row checked field by field */
  sample: MigProfile
}

const p = (gpuIndex: number, name: string, id: number, free: number, total: number, memoryGiB: number, smCount: number): MigProfile => ({
  gpuIndex,
  name,
  id,
  free,
  total,
  memoryGiB,
  smCount,
})

const A100_40 = ['1g.5gb', '1g.5gb+me', '1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb']

const rows: Row[] = [
  {file: 'a100-pcie-40gb__mig-lgip.txt', count: 7, names: A100_40, sample: p(0, '7g.40gb', 0, 1, 1, 39.5, 98)},
  {file: 'a100-sxm4-40gb__mig-lgip-r450.txt', count: 7, names: A100_40, sample: p(0, '3g.20gb', 9, 2, 2, 19.5, 42)},
  {file: 'a30__mig-lgip-all-used-pre-r525.txt', count: 4, names: ['1g.6gb', '1g.6gb+me', '2g.12gb', '4g.24gb'], sample: p(0, '2g.12gb', 5, 0, 2, 11.69, 28)},
  {file: 'b200__mig-lgip-partial.txt', count: 4, names: ['1g.23gb', '1g.23gb+me', '1g.45gb', '2g.45gb'], sample: p(0, '2g.45gb', 14, 3, 3, 44.25, 36)},
  {file: 'cmp170hx-modded__mig-lgip-single-profile-wide.txt', count: 1, names: ['1g.64gb'], sample: p(0, '1g.64gb', 0, 1, 1, 63, 70)},
  {
    file: 'gb200__mig-lgip-partial-wide-81col.txt',
    count: 4,
    names: ['1g.23gb', '1g.23gb+me', '1g.47gb', '2g.47gb'],
    sample: p(0, '1g.47gb', 15, 4, 4, 45.5, 32),
  },
  {file: 'gh200-144gb__mig-lgip-partial.txt', count: 4, names: ['1g.18gb', '1g.18gb+me', '1g.36gb', '2g.36gb'], sample: p(0, '1g.36gb', 15, 4, 4, 35.25, 26)},
  {
    file: 'gh200-96gb__mig-lgip-r550.txt',
    count: 7,
    names: ['1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.48gb', '4g.48gb', '7g.96gb'],
    sample: p(0, '7g.96gb', 0, 1, 1, 93, 132),
  },
  {
    file: 'h100-nvl-94gb__mig-lgip-all-used.txt',
    count: 7,
    names: ['1g.12gb', '1g.12gb+me', '1g.24gb', '2g.24gb', '3g.47gb', '4g.47gb', '7g.94gb'],
    sample: p(0, '3g.47gb', 9, 0, 2, 46.12, 60),
  },
  {
    file: 'h100-sxm-80gb__mig-lgip.txt',
    count: 7,
    names: ['1g.10gb', '1g.10gb+me', '1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb'],
    sample: p(0, '1g.10gb', 19, 7, 7, 9.75, 16),
  },
  {
    file: 'h200-sxm-141gb-x8__mig-lgip-partial-gpu2-gpu3.txt',
    count: 6,
    names: ['3g.71gb', '4g.71gb', '7g.141gb', '1g.18gb', '1g.18gb+me', '1g.35gb'],
    sample: p(2, '7g.141gb', 0, 1, 1, 139.75, 132),
  },
  {
    file: 'h200-sxm-141gb-x8__mig-lgip-partial-gpu6.txt',
    count: 6,
    names: ['1g.18gb', '1g.18gb+me', '1g.35gb', '2g.35gb', '3g.71gb', '4g.71gb'],
    sample: p(6, '4g.71gb', 5, 1, 1, 69.5, 64),
  },
  {
    file: 'h200-sxm-141gb__mig-lgip-wide-81col-excerpt-from-unit-test.txt',
    count: 4,
    names: ['1g.18gb', '1g.18gb+me', '2g.35gb', '7g.141gb'],
    sample: p(0, '7g.141gb', 0, 1, 1, 140, 132),
  },
  {
    file: 'rtx-pro-6000-blackwell-server__mig-lgip-partial-gpu0.txt',
    count: 3,
    names: ['1g.24gb', '1g.24gb+me', '1g.24gb+gfx'],
    sample: p(0, '1g.24gb+gfx', 47, 4, 4, 23.12, 46),
  },
  {
    file: 'rtx-pro-6000-blackwell-server__mig-lgip-partial-gpu1.txt',
    count: 5,
    names: ['1g.24gb-me', '2g.48gb', '2g.48gb+gfx', '2g.48gb+me.all', '2g.48gb-me'],
    // The name fills its column: only two spaces are left before the ID.
    sample: p(1, '2g.48gb+me.all', 64, 1, 1, 46.5, 94),
  },
]

describe('parseMigLgip', () => {
  test.each(rows)('$file', ({file, count, names, sample}) => {
    const profiles = parseMigLgip(fixture(file))
    expect(profiles).toHaveLength(count)
    expect(profiles.map((profile) => profile.name)).toEqual(names)
    expect(profiles).toContainEqual(sample)
  })

  test('t4__mig-lgip-no-mig-enabled-devices.txt yields no profiles', () => {
    expect(fixture('t4__mig-lgip-no-mig-enabled-devices.txt').trim()).toBe('No MIG-enabled devices found.')
    expect(parseMigLgip(fixture('t4__mig-lgip-no-mig-enabled-devices.txt'))).toEqual([])
  })

  test('the 79- and 81-column layouts give the same fields for the same profile', () => {
    const narrow = parseMigLgip(fixture('h200-sxm-141gb-x8__mig-lgip-partial-gpu6.txt')).find((x) => x.name === '1g.18gb+me')
    const wide = parseMigLgip(fixture('h200-sxm-141gb__mig-lgip-wide-81col-excerpt-from-unit-test.txt')).find((x) => x.name === '1g.18gb+me')
    expect({...narrow, gpuIndex: 0}).toEqual(wide)
  })

  test('a name that touches the ID column still splits', () => {
    const line = '|   0  MIG 2g.48gb+me.all64      1/1        46.50      No     94     4     4   |'
    expect(parseMigLgip(line)).toEqual([p(0, '2g.48gb+me.all', 64, 1, 1, 46.5, 94)])
  })
})
