import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {loadCatalog, parseCatalogText} from '../../../src/catalog/load-catalog.js'
import {resolveTarget} from '../../../src/catalog/resolve-target.js'
import {userCatalogDirs} from '../../../src/catalog/user-catalog-dirs.js'
import {thrown} from '../support/thrown.js'
import {RTX_9090_YAML} from './user-target.js'

const builtinDir = fileURLToPath(new URL('../../../catalog', import.meta.url))

const TARGET = RTX_9090_YAML
const targetsFile = (body: string) => `version: 1\ntargets:\n${body}`

let tmp: string
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'catalog-test-'))
})
afterEach(() => {
  fs.rmSync(tmp, {recursive: true, force: true})
})

function userDir(files: Record<string, string>): string {
  const dir = path.join(tmp, 'catalog.d')
  fs.mkdirSync(dir, {recursive: true})
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text)
  return dir
}

describe('parseCatalogText', () => {
  it('accepts a valid user target and fills default aliases', () => {
    const parsed = parseCatalogText(targetsFile(TARGET.replace("    aliases: ['9090']\n", '')), 'mine.yaml')
    expect(parsed.targets?.[0]).toMatchObject({key: 'rtx_9090', aliases: []})
  })

  it.each([
    ['missing field', targetsFile(TARGET.replace('    smCount: 200\n', '')), 'rtx_9090'],
    ['unknown field', targetsFile(TARGET.replace('    tdpW: 600\n', '    tdpW: 600\n    tdpWatts: 600\n')), 'rtx_9090'],
    ['wrong type', targetsFile(TARGET.replace('smCount: 200', 'smCount: lots')), 'rtx_9090'],
    ['unquoted compute capability', targetsFile(TARGET.replace("computeCapability: '12.0'", 'computeCapability: 12.0')), 'rtx_9090'],
    ['unknown arch', targetsFile(TARGET.replace('arch: blackwell', 'arch: rubin')), 'rtx_9090'],
    ['entry without a key', targetsFile(TARGET.replace('  - key: rtx_9090\n    name', '  - name')), '#0'],
    ['bad MIG profile', `version: 1\nhosts:\n  - key: h999\n    mig: {memorySlices: 8, computeSlices: 7, profiles: [{name: x}]}\n`, 'h999'],
  ])('%s -> CATALOG_INVALID naming file and entry', (_case, text, entry) => {
    const error = thrown(() => parseCatalogText(text, 'catalog.d/mine.yaml'))
    expect(error.code).toBe('CATALOG_INVALID')
    expect(error.exit).toBe(2)
    expect(error.message).toContain('catalog.d/mine.yaml')
    expect(error.message).toContain(entry)
    expect(error.message).not.toContain('\n')
  })

  it.each([
    ['bad version', targetsFile(TARGET).replace('version: 1', 'version: 2')],
    ['no version', targetsFile(TARGET).replace('version: 1\n', '')],
    ['empty file', ''],
    ['a list, not a mapping', '- 1\n- 2\n'],
  ])('%s -> CATALOG_INVALID naming the file', (_case, text) => {
    const error = thrown(() => parseCatalogText(text, 'catalog.d/mine.yaml'))
    expect(error.code).toBe('CATALOG_INVALID')
    expect(error.message).toContain('catalog.d/mine.yaml')
  })

  it('names file and line on a YAML syntax error', () => {
    const error = thrown(() => parseCatalogText('version: 1\ntargets:\n  - key: [unclosed\n', 'catalog.d/broken.yaml'))
    expect(error.code).toBe('CATALOG_INVALID')
    expect(error.message).toMatch(/catalog\.d\/broken\.yaml:\d+/)
  })
})

describe('loadCatalog', () => {
  it('skips user folders that do not exist', () => {
    const catalog = loadCatalog({builtinDir, userDirs: [path.join(tmp, 'nope')]})
    expect(catalog.targets.length).toBeGreaterThanOrEqual(60)
    expect(catalog.files.every((f) => f.startsWith(builtinDir))).toBe(true)
  })

  it('adds user targets and lets them override built-ins by key', () => {
    const override = TARGET.replace('key: rtx_9090', 'key: rtx_3090').replace("aliases: ['9090']", "aliases: ['3090']").replace('smCount: 200', 'smCount: 83')
    const dir = userDir({'mine.yaml': targetsFile(TARGET), 'override.yml': targetsFile(override), 'ignored.txt': 'not yaml: ['})
    const catalog = loadCatalog({builtinDir, userDirs: [dir]})
    expect(resolveTarget(catalog, '9090').key).toBe('rtx_9090')
    expect(resolveTarget(catalog, '3090').smCount).toBe(83)
    expect(catalog.targets.filter((t) => t.key === 'rtx_3090')).toHaveLength(1)
    expect(catalog.files).toEqual(expect.arrayContaining([path.join(dir, 'mine.yaml'), path.join(dir, 'override.yml')]))
  })

  it('rejects an alias claimed by two targets, naming both', () => {
    const dir = userDir({'mine.yaml': targetsFile(TARGET.replace("aliases: ['9090']", "aliases: ['RTX 4090']"))})
    const error = thrown(() => loadCatalog({builtinDir, userDirs: [dir]}))
    expect(error.code).toBe('CATALOG_INVALID')
    expect(error.message).toContain('rtx_9090')
    expect(error.message).toContain('rtx_4090')
    expect(error.message).toContain('mine.yaml')
  })

  it('rejects the same key in two user files', () => {
    const dir = userDir({'a.yaml': targetsFile(TARGET), 'b.yaml': targetsFile(TARGET.replace("aliases: ['9090']", 'aliases: []'))})
    const error = thrown(() => loadCatalog({builtinDir, userDirs: [dir]}))
    expect(error.code).toBe('CATALOG_INVALID')
    expect(error.message).toContain('b.yaml')
  })

  it('reports a malformed user file with its path', () => {
    const dir = userDir({'bad.yaml': targetsFile(TARGET.replace('tdpW: 600', 'tdpW: "600 W"'))})
    const error = thrown(() => loadCatalog({builtinDir, userDirs: [dir]}))
    expect(error.code).toBe('CATALOG_INVALID')
    expect(error.message).toContain(path.join(dir, 'bad.yaml'))
    expect(error.message).toContain('rtx_9090')
  })

  it('loads fast enough to run on every command', () => {
    const started = process.hrtime.bigint()
    for (let i = 0; i < 5; i++) loadCatalog({builtinDir, userDirs: []})
    // Generous bound: this guards against accidental quadratic work, it is not a benchmark.
    expect(Number(process.hrtime.bigint() - started) / 1e6 / 5).toBeLessThan(250)
  })
})

describe('userCatalogDirs', () => {
  it('uses $GPU_COSPLAY_CATALOG_DIR alone when set', () => {
    expect(userCatalogDirs({GPU_COSPLAY_CATALOG_DIR: '/etc/cosplay', XDG_CONFIG_HOME: '/x'}, '/home/u')).toEqual(['/etc/cosplay'])
  })

  it('falls back to $XDG_CONFIG_HOME, then ~/.config', () => {
    expect(userCatalogDirs({XDG_CONFIG_HOME: '/x'}, '/home/u')).toEqual(['/x/gpu-cosplay/catalog.d'])
    expect(userCatalogDirs({}, '/home/u')).toEqual(['/home/u/.config/gpu-cosplay/catalog.d'])
  })
})

describe('host model consistency', () => {
  const hostsYaml = fs.readFileSync(path.join(builtinDir, 'hosts.yaml'), 'utf8')

  it('rejects an inverted power range', () => {
    const broken = hostsYaml.replace('powerDefaultW: 700', 'powerDefaultW: 900')
    const error = thrown(() => parseCatalogText(broken, 'hosts.yaml'))
    expect(error.code).toBe('CATALOG_INVALID')
    expect(error.message).toContain('h200_sxm')
  })

  it('rejects a profile with more memory slices than the GPU', () => {
    const broken = hostsYaml.replace(
      '{name: 7g.141gb, id: 0, smCount: 132, memoryGiB: 140.00, memorySlices: 8',
      '{name: 7g.141gb, id: 0, smCount: 132, memoryGiB: 140.00, memorySlices: 9',
    )
    const error = thrown(() => parseCatalogText(broken, 'hosts.yaml'))
    expect(error.code).toBe('CATALOG_INVALID')
    expect(error.message).toContain('h200_sxm')
  })
})
