import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import {fileURLToPath} from 'node:url'

import {load} from 'js-yaml'

import {loadCatalog, parseCatalogText} from '../../../src/catalog/load-catalog.js'
import {resolveTarget} from '../../../src/catalog/resolve-target.js'
import type {Measurement, Target} from '../../../src/catalog/types.js'
import {builtinCatalog} from '../plan/catalog-for-tests.js'
import {thrown} from '../support/thrown.js'
import {CHSASANK_COPY, cellNumber, chsasankRows, isBareMetal, median, type SourceRow, withoutSuffix, ZZC_COLUMNS, zzcRows} from './measured-sources.js'
import {RTX_9090_YAML} from './user-target.js'

const ZZC = 'github.com/zzc0721/torch-performance-test-data database.md @ 9d82827'
const CHSASANK = 'github.com/chsasank/device-benchmarks README.md'
const root = fileURLToPath(new URL('../../..', import.meta.url))
const fixture = (path: string) => JSON.parse(fs.readFileSync(`${root}/${path}`, 'utf8'))
const unassigned = load(fs.readFileSync(`${root}/test/fixtures/reference/measured/unassigned.yaml`, 'utf8')) as {
  rows: {source: string; row: string; why: string}[]
}

const catalog = builtinCatalog()
const entries = catalog.targets.flatMap((t) => (t.measured ?? []).map((m) => ({t, m})))
const ofSource = (prefix: string) => entries.filter(({m}) => m.source.startsWith(prefix))

/** The catalog card a source's device name stands for, or null: the full name first, then without its memory size. */
function cardOf(device: string): Target | null {
  for (const name of [device, withoutSuffix(device)]) {
    try {
      return resolveTarget(catalog, name)
    } catch {
      // not a catalog card under this spelling
    }
  }
  return null
}

const TARGET = `version: 1\ntargets:\n${RTX_9090_YAML}`
const ENTRY = `    measured:\n    - {method: matmul-best-of-sizes, source: 'my bench', rows: ['run 1'], fp32Tflops: 80}\n`

describe('measured entries in a catalog file', () => {
  it('are optional, and read when given', () => {
    expect(parseCatalogText(TARGET, 'mine.yaml').targets?.[0].measured).toBeUndefined()
    const parsed = parseCatalogText(`${TARGET}${ENTRY}`, 'mine.yaml').targets?.[0].measured
    expect(parsed).toEqual([{method: 'matmul-best-of-sizes', source: 'my bench', rows: ['run 1'], fp32Tflops: 80}])
  })

  it.each([
    ['without a source', `{method: matmul-best-of-sizes, rows: ['r'], fp32Tflops: 80}`],
    ['without the rows it comes from', `{method: matmul-best-of-sizes, source: 's', rows: [], fp32Tflops: 80}`],
    ['with an unknown method', `{method: vibes, source: 's', rows: ['r'], fp32Tflops: 80}`],
    ['without any figure', `{method: matmul-best-of-sizes, source: 's', rows: ['r']}`],
    ['with a zero figure', `{method: matmul-best-of-sizes, source: 's', rows: ['r'], fp32Tflops: 0}`],
  ])('are refused %s', (_, entry) => {
    const error = thrown(() => parseCatalogText(`${TARGET}    measured:\n    - ${entry}\n`, 'mine.yaml'))
    expect([error.code, error.exit]).toEqual(['CATALOG_INVALID', 2])
  })

  it('replace achievedFraction, which a file may no longer carry (one source of truth)', () => {
    const error = thrown(() => parseCatalogText(`${TARGET}    achievedFraction: {fp32: 0.7, source: 'x'}\n`, 'mine.yaml'))
    expect([error.code, error.exit]).toEqual(['CATALOG_INVALID', 2])
  })

  it('a host whose measuredAs names no target is refused', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'measured-as-'))
    try {
      fs.copyFileSync(`${root}/catalog/gpus.yaml`, `${dir}/gpus.yaml`)
      fs.writeFileSync(
        `${dir}/hosts.yaml`,
        fs.readFileSync(`${root}/catalog/hosts.yaml`, 'utf8').replace('measuredAs: h200_sxm_141g', 'measuredAs: h200_sxm_999g'),
      )
      const error = thrown(() => loadCatalog({builtinDir: dir, userDirs: []}))
      expect([error.code, error.exit]).toEqual(['CATALOG_INVALID', 2])
    } finally {
      fs.rmSync(dir, {recursive: true, force: true})
    }
  })
})

describe('the built-in measured entries', () => {
  it('cover at least T4, RTX 3090, RTX 4090, H100 and H200, each with FP32 and its tensor figure in the reference method', () => {
    for (const key of ['t4', 'rtx_3090', 'rtx_4090', 'h100_sxm_80g', 'h200_sxm_141g']) {
      const t = catalog.targets.find((x) => x.key === key)!
      expect([key, t.reference?.fp32Tflops.basis, t.reference?.tensorTflops?.basis]).toEqual([key, 'measured', 'measured'])
    }
    expect(entries.filter(({m}) => m.method === 'matmul-best-of-sizes').length).toBeGreaterThanOrEqual(25)
  })

  it('each name where it comes from: a repository file at a commit, or one of this project fixtures that exists', () => {
    for (const {t, m} of entries) {
      const project = /^this project: (test\/fixtures\/\S+)/.exec(m.source)
      if (project) expect([t.key, fs.existsSync(`${root}/${project[1].replace(/,$/, '')}`)]).toEqual([t.key, true])
      else expect([t.key, m.source]).toEqual([t.key, expect.stringMatching(/^github\.com\/[\w.-]+\/[\w.-]+ \S.* @ [0-9a-f]{7}/)])
    }
  })

  it('a card measured in several rows of one source says by which rule they were combined', () => {
    for (const {t, m} of entries) if (m.rows.length > 1) expect([t.key, m.rule]).toEqual([t.key, expect.stringMatching(/median/)])
  })
})

describe('figures from zzc0721/torch-performance-test-data, recomputed from the copy of its table', () => {
  const rows = zzcRows()
  const byId = new Map(rows.map((r) => [r.id, r]))
  const zzc = ofSource(ZZC)

  it.each(zzc.map(({t, m}) => [t.key, m] as const))('%s: its rows exist, bare metal where there is any, and each figure is their median', (_, m) => {
    const used = m.rows.map((id) => byId.get(id))
    expect(used.every(Boolean)).toBe(true)
    // rows set aside because bare-metal rows exist must not be bare metal; then every row used is
    const outranked = (m.setAside ?? []).filter((s) => /bare-metal rows exist/.test(s.why)).map((s) => byId.get(s.row)!)
    expect(outranked.some(isBareMetal)).toBe(false)
    if (outranked.length > 0 || (used as SourceRow[]).some(isBareMetal)) expect((used as SourceRow[]).every(isBareMetal)).toBe(true)
    for (const [figure, column] of Object.entries(ZZC_COLUMNS) as [keyof typeof ZZC_COLUMNS, number][]) {
      const values = (used as SourceRow[]).map((r) => cellNumber(r.cells[column])).filter((v): v is number => v !== null)
      if (m[figure] === undefined) continue
      expect([figure, m[figure]]).toEqual([figure, Math.round(median(values) * 1000) / 1000])
    }
  })

  it('every row that names a catalog card is used, set aside with why, or listed as unassigned with why', () => {
    const accounted = new Set([
      ...zzc.flatMap(({m}) => [...m.rows, ...(m.setAside ?? []).map((s) => s.row)]),
      ...unassigned.rows.filter((u) => u.source === 'zzc0721').map((u) => u.row),
    ])
    const missing = rows.filter((r) => cardOf(r.device) !== null && !accounted.has(r.id)).map((r) => `${r.id} -> ${cardOf(r.device)!.key}`)
    expect(missing).toEqual([])
  })

  it('a card with a tensor figure has no BF16 entry when it has no BF16 (the table runs BF16 emulated there)', () => {
    for (const {t, m} of zzc) if (t.bf16Tflops === null) expect([t.key, m.bf16Tflops]).toEqual([t.key, undefined])
  })
})

describe('copy bandwidth from chsasank/device-benchmarks, recomputed from the copy of its table', () => {
  const rows = chsasankRows()
  const byId = new Map(rows.map((r) => [r.id, r]))
  const chsasank = ofSource(CHSASANK)

  it.each(chsasank.map(({t, m}) => [t.key, m] as const))('%s: the row exists and its copy figure is the entry', (_, m) => {
    expect(m.rows).toHaveLength(1)
    expect(m.copyGBs).toBe(cellNumber(byId.get(m.rows[0])?.cells[CHSASANK_COPY]))
  })

  it('every row that names a catalog card is used, set aside with why, or listed as unassigned with why', () => {
    const accounted = new Set([
      ...chsasank.flatMap(({m}) => [...m.rows, ...(m.setAside ?? []).map((s) => s.row)]),
      ...unassigned.rows.filter((u) => u.source === 'chsasank').map((u) => u.row),
    ])
    expect(rows.filter((r) => cardOf(r.device) !== null && !accounted.has(r.id)).map((r) => r.id)).toEqual([])
  })

  it('no copy figure exceeds the datasheet bandwidth of its card', () => {
    for (const {t, m} of chsasank) expect(m.copyGBs!).toBeLessThan(t.bandwidthGBs)
  })
})

describe("figures from this project's own H200 fixtures", () => {
  const h200 = catalog.targets.find((t) => t.key === 'h200_sxm_141g')!
  const entry = (method: Measurement['method']) => h200.measured!.filter((m) => m.method === method && m.source.startsWith('this project'))

  it('gpu_cosplay_perf.py on the whole GPU: FP32, BF16 and copy as measured, and the total memory torch saw', () => {
    const whole = fixture('test/fixtures/perf/h200-whole-gpu.json')
    const [perf] = entry('cosplay-perf')
    expect([perf.fp32Tflops, perf.bf16Tflops, perf.copyGBs]).toEqual([whole.axes.fp32.measured, whole.axes.bf16.measured, whole.axes.bandwidth.measured])
    const search = whole.axes.vram.search
    const totalBytes = search.overCapBytes - 1024 ** 3 + search.heldBeforeBytes
    expect(entry('device-properties')[0].totalMemoryMiB).toBe(Math.floor(totalBytes / 1024 ** 2))
  })

  it("the MPS sweep: the whole GPU without MPS, and the host's per-SM curve is the median per SM count of its rows", () => {
    const sweep = fixture('test/fixtures/mps/h200-mps-sweep.json')
    expect(entry('mps-sweep-gemm')[0].bf16Tflops).toBe(sweep.noMps.bf16Tflops)
    const bySms = new Map<number, number[]>()
    for (const row of sweep.rows) bySms.set(row.attrSms, [...(bySms.get(row.attrSms) ?? []), row.bf16Tflops])
    const expected = [...bySms].sort((a, b) => a[0] - b[0]).map(([sms, values]) => [sms, Math.round(median(values) * 100) / 100])
    const host = catalog.hosts.find((h) => h.key === 'h200_sxm')!
    expect(host.smCurves?.[0].points).toEqual(expected)
  })

  it('what an MPS client cannot allocate of its pinned limit, from the 16 GiB run', () => {
    const run = fixture('test/fixtures/perf/h200-mps50-pinned16g.json')
    const pinnedMiB = Number(run.device.mps.env.GPU_COSPLAY_MPS_PINNED_MEM_LIMIT_MIB)
    const usableMiB = Math.floor(run.axes.vram.search.usableBytes / 1024 ** 2)
    expect(catalog.hosts.find((h) => h.key === 'h200_sxm')!.mpsClientOverheadMiB?.value).toBe(pinnedMiB - usableMiB)
  })
})

describe('derived references', () => {
  it('say which figures are measured and which estimated, and every host model reaches its card', () => {
    const t3090 = catalog.targets.find((t) => t.key === 'rtx_3090')!.reference!
    expect([t3090.fp32Tflops.value, t3090.tensorTflops?.value, t3090.copyGBs.value, t3090.totalMemoryMiB?.value]).toEqual([24.625, 76.46, 831, 24268])
    const l40 = catalog.targets.find((t) => t.key === 'l40')!.reference!
    expect([l40.fp32Tflops.basis, l40.tensorTflops?.basis, l40.copyGBs.basis, l40.totalMemoryMiB]).toEqual(['estimated', 'estimated', 'estimated', null])
    for (const host of catalog.hosts) expect([host.key, host.measuredRates?.card]).toEqual([host.key, host.measuredAs])
  })

  it('a card without tensor cores has no tensor reference', () => {
    expect(catalog.targets.find((t) => t.key === 'gtx_1650')!.reference!.tensorTflops).toBeNull()
  })
})
