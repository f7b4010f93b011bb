import type {HostModel} from '../../../src/catalog/types.js'
import {fits, packMigLayout} from '../../../src/export/mig-layout.js'
import {hostModel} from '../plan/catalog-for-tests.js'
import {thrown} from '../support/thrown.js'

function instances(model: HostModel, layout: Record<string, number>) {
  return Object.entries(layout).flatMap(([name, n]) => Array.from({length: n}, () => model.mig!.profiles.find((p) => p.name === name)!))
}

// Rows from the MIG user guide's supported-profile combinations (H100/H200 and A30 tables) and cases it rules out.
describe('fits: MIG placement on one GPU', () => {
  it.each([
    ['h200', {'7g.141gb': 1}, true],
    ['h200', {'4g.71gb': 1, '3g.71gb': 1}, true],
    ['h200', {'3g.71gb': 2}, true],
    ['h200', {'2g.35gb': 3, '1g.18gb': 1}, true],
    ['h200', {'1g.18gb': 7}, true],
    ['h200', {'1g.35gb': 4}, true],
    ['h200', {'1g.35gb': 2, '1g.18gb': 4}, true],
    ['h200', {'4g.71gb': 1, '1g.18gb': 3}, true],
    ['h200', {'1g.18gb': 8}, false],
    ['h200', {'2g.35gb': 4}, false],
    ['h200', {'4g.71gb': 2}, false],
    ['h200', {'3g.71gb': 2, '1g.18gb': 1}, false],
    ['h200', {'1g.35gb': 4, '1g.18gb': 1}, false],
    ['h200', {'1g.18gb+me': 2}, false],
    ['a30', {'2g.12gb': 2}, true],
    ['a30', {'1g.6gb': 4}, true],
    ['a30', {'2g.12gb': 1, '1g.6gb': 2}, true],
    ['a30', {'4g.24gb': 1, '1g.6gb': 1}, false],
  ] as const)('on %s, %j -> %s', (host, layout, expected) => {
    const model = hostModel(host)
    expect(fits(model, instances(model, layout))).toBe(expected)
  })
})

describe('packMigLayout', () => {
  it('fills a GPU with one profile up to what fits', () => {
    const layout = packMigLayout(hostModel('h200'), [{targetKey: 'x', asked: 'x', profile: '2g.35gb', count: 'fill'}])
    expect(layout.migDevices).toEqual({'2g.35gb': 3})
  })

  it('names the first instance that does not fit (code and exit only)', () => {
    const error = thrown(() =>
      packMigLayout(hostModel('h200'), [
        {targetKey: 'a', asked: 'a', profile: '3g.71gb', count: 2},
        {targetKey: 'b', asked: 'b', profile: '1g.18gb', count: 1},
      ]),
    )
    expect({code: error.code, exit: error.exit}).toEqual({code: 'MIX_DOES_NOT_FIT', exit: 2})
    expect(error.message).toContain('b #1')
  })
})
