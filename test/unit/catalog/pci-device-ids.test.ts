import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'

import {builtinCatalog} from '../plan/catalog-for-tests.js'

const CAPTURES = join(process.cwd(), 'test', 'fixtures', 'nvidia-smi')

/** Every real `nvidia-smi -a` capture of a host model: its first GPU's product name and PCI Device Id. */
function capturedIds(): [string, string, string][] {
  return readdirSync(CAPTURES)
    .filter((f) => f.endsWith('-a.txt'))
    .flatMap((file) => {
      const text = readFileSync(join(CAPTURES, file), 'utf8')
      const name = /Product Name\s+: (.+)/.exec(text)?.[1].trim()
      const id = /Device Id\s+: (0x[0-9A-F]{8})/.exec(text)?.[1]
      return name && id ? [[file, name, id] as [string, string, string]] : []
    })
}

describe('host models: PCI device ids (mig-parted device-filter)', () => {
  const hosts = builtinCatalog().hosts
  const cases = capturedIds().filter(([, name]) => hosts.some((h) => h.smiNames.includes(name)))

  it('has captures to compare against', () => {
    expect(cases.length).toBeGreaterThanOrEqual(5)
  })

  it.each(cases)('%s (%s) prints %s, which its host model lists', (_file, name, id) => {
    const model = hosts.find((h) => h.smiNames.includes(name))!
    expect(model.pciDeviceIds).toContain(id)
  })

  it('every MIG-capable host model has at least one', () => {
    expect(hosts.filter((h) => h.mig !== null && !h.pciDeviceIds?.length).map((h) => h.key)).toEqual([])
  })
})
