import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {parseMigCreate, type MigCreated} from '../../../src/host/parse-mig-create.js'
import {parseMigDestroy, type MigDestroyed} from '../../../src/host/parse-mig-destroy.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

const gi = (gpuInstanceId: number, profileName: string, profileId: number): MigCreated => ({
  kind: 'gpu-instance',
  gpuIndex: 0,
  gpuInstanceId,
  profileName,
  profileId,
})
const ci = (gpuInstanceId: number, computeInstanceId: number | null, profileName: string, profileId: number): MigCreated => ({
  kind: 'compute-instance',
  gpuIndex: 0,
  gpuInstanceId,
  computeInstanceId,
  profileName,
  profileId,
})

const sevenWithC = (profileName: string) => [13, 11, 12, 7, 8, 9, 10].flatMap((id) => [gi(id, profileName, 19), ci(id, 0, profileName, 0)])

const created: Array<{file: string; expected: MigCreated[]}> = [
  {file: 'a100-pcie-80gb__mig-cgi-3g40gb-3g40gb-no-C.txt', expected: [gi(1, '3g.40gb', 9), gi(2, '3g.40gb', 9)]},
  // Partial success before the error: these are the instances an undo must remove.
  {
    file: 'a100-sxm4-40gb__mig-cgi-19-19-14-9-insufficient-resources.txt',
    expected: [gi(13, '1g.5gb', 19), gi(11, '1g.5gb', 19), gi(3, '2g.10gb', 14)],
  },
  {
    file: 'a100-sxm4-40gb__mig-cgi-9-19-14-19-no-C.txt',
    expected: [gi(2, '3g.20gb', 9), gi(7, '1g.5gb', 19), gi(4, '2g.10gb', 14), gi(8, '1g.5gb', 19)],
  },
  {
    file: 'a100-sxm4-40gb__mig-cgi-9-3g20gb-C.txt',
    expected: [gi(2, '3g.20gb', 9), ci(2, 0, '3g.20gb', 2), gi(1, '3g.20gb', 9), ci(1, 0, '3g.20gb', 2)],
  },
  {file: 'a30__mig-cgi-14-C.txt', expected: [gi(3, '1g.6gb', 14), ci(3, 0, '1g.6gb', 0)]},
  {file: 'a30__mig-cgi-5-C.txt', expected: [gi(2, '2g.12gb', 5), ci(2, 0, '2g.12gb', 1)]},
  {file: 'cmp170hx-modded__mig-cgi-7g40gb-C-invalid-argument.txt', expected: []},
  {
    file: 'gh200-96gb__mig-cgi-15-15-15-C.txt',
    // The default CI profile of GI profile 15 is 7, not 0.
    expected: [5, 3, 4].flatMap((id) => [gi(id, '1g.24gb', 15), ci(id, 0, '1g.24gb', 7)]),
  },
  {file: 'gh200-96gb__mig-cgi-19x7-C.txt', expected: sevenWithC('1g.12gb')},
  {file: 'gh200-96gb__mig-cgi-error-in-use-by-another-client.txt', expected: []},
  {file: 'gh200-96gb__mig-cgi-error-insufficient-resources.txt', expected: []},
  {file: 'h100-sxm-80gb__mig-cgi-19x7-C.txt', expected: sevenWithC('1g.10gb')},
  {file: 'h100-sxm-80gb__mig-cgi-9-14-no-C.txt', expected: [gi(2, '3g.40gb', 9), gi(3, '2g.20gb', 14)]},
  {file: 'a100-pcie-80gb__mig-cci-1c3g40gb-x2-gi-1.txt', expected: [ci(1, 0, '1c.3g.40gb', 0), ci(1, 1, '1c.3g.40gb', 0)]},
  // Old drivers do not name the new CI.
  {file: 'a100-sxm4-40gb__mig-cci-0-0-0-gi-1.txt', expected: [1, 2, 3].map(() => ci(1, null, '1c.3g.20gb', 0))},
  {file: 'h100-sxm-80gb__mig-cci-gi-3-default.txt', expected: [ci(3, 0, '2g.20gb', 1)]},
]

const dci = (gpuInstanceId: number, computeInstanceId: number): MigDestroyed => ({kind: 'compute-instance', gpuIndex: 0, gpuInstanceId, computeInstanceId})
const dgi = (gpuInstanceId: number): MigDestroyed => ({kind: 'gpu-instance', gpuIndex: 0, gpuInstanceId})

const destroyed: Array<{file: string; expected: MigDestroyed[]}> = [
  {file: 'a100-pcie-80gb__mig-dci-gi-1-ci-0-1.txt', expected: [dci(1, 0), dci(1, 1)]},
  {file: 'a100-sxm4-40gb__mig-dci-ci-0-1-2-gi-1.txt', expected: [dci(1, 0), dci(1, 1), dci(1, 2)]},
  {file: 'a100-sxm4-40gb__mig-dgi.txt', expected: [dgi(1), dgi(2)]},
  {file: 'gh200-96gb__mig-dci-no-gpu-instances-found.txt', expected: []},
  {file: 'h100-pcie-80gb__mig-dci-then-dgi.txt', expected: [dci(7, 0), dci(8, 0), dci(9, 0), dci(2, 0), dgi(7), dgi(8), dgi(9), dgi(2)]},
  {file: 'h100-sxm-80gb__mig-dci-all.txt', expected: [7, 8, 9, 10, 11, 12, 13].map((id) => dci(id, 0))},
  {file: 'h100-sxm-80gb__mig-dgi-all.txt', expected: [7, 8, 9, 10, 11, 12, 13].map((id) => dgi(id))},
]

describe('parseMigCreate', () => {
  test.each(created)('$file', ({file, expected}) => {
    expect(parseMigCreate(fixture(file))).toEqual(expected)
  })
})

describe('parseMigDestroy', () => {
  test.each(destroyed)('$file', ({file, expected}) => {
    expect(parseMigDestroy(fixture(file))).toEqual(expected)
  })
})
