import {parseCatalogText} from '../../../src/catalog/load-catalog.js'
import {builtinCatalog} from '../plan/catalog-for-tests.js'
import {thrown} from '../support/thrown.js'
import {RTX_9090_YAML} from './user-target.js'

const TARGET = `version: 1\ntargets:\n${RTX_9090_YAML}`

describe('achievedFraction in the catalog', () => {
  it('is optional, and read when given', () => {
    expect(parseCatalogText(TARGET, 'mine.yaml').targets?.[0].achievedFraction).toBeUndefined()
    const parsed = parseCatalogText(`${TARGET}    achievedFraction: {bf16: 0.9, source: 'my benchmark'}\n`, 'mine.yaml')
    expect(parsed.targets?.[0].achievedFraction).toEqual({bf16: 0.9, source: 'my benchmark'})
  })

  it.each([
    ['without a source', '{fp32: 0.7}'],
    ['with an unknown axis', "{fp16: 0.7, source: 'x'}"],
    ['above what any card reaches', "{fp32: 1.5, source: 'x'}"],
    ['zero', "{fp32: 0, source: 'x'}"],
  ])('is refused %s', (_, value) => {
    const error = thrown(() => parseCatalogText(`${TARGET}    achievedFraction: ${value}\n`, 'mine.yaml'))
    expect([error.code, error.exit]).toEqual(['CATALOG_INVALID', 2])
  })

  it('every built-in one cites where it was measured', () => {
    const withFraction = builtinCatalog().targets.filter((t) => t.achievedFraction)
    expect(withFraction.map((t) => t.key).sort()).toEqual(['rtx_3090', 'rtx_4090'])
    for (const t of withFraction) expect(t.achievedFraction!.source).toMatch(/github\.com\/\S+/)
  })
})
