import {fileURLToPath} from 'node:url'

import {loadCatalog} from '../../../src/catalog/load-catalog.js'
import {matchHostModel} from '../../../src/catalog/match-host-model.js'
import {normaliseGpuName} from '../../../src/catalog/normalise-gpu-name.js'
import {resolveHostModel, resolveTarget} from '../../../src/catalog/resolve-target.js'
import {thrown} from '../support/thrown.js'

const builtinDir = fileURLToPath(new URL('../../../catalog', import.meta.url))
const catalog = loadCatalog({builtinDir, userDirs: []})

describe('normaliseGpuName', () => {
  it.each([
    ['3090ti', '3090 Ti'],
    ['3090ti', 'rtx-3090-ti'],
    ['3090', 'NVIDIA GeForce RTX 3090'],
    ['t4', 'Tesla T4'],
    ['4060ti16g', 'RTX 4060 Ti 16GB'],
    ['a10080g', 'a100_80gb'],
    ['a6000', 'NVIDIA RTX A6000'],
  ])('%s = %s', (a, b) => {
    expect(normaliseGpuName(a)).toBe(normaliseGpuName(b))
  })

  it('keeps suffixes apart', () => {
    expect(normaliseGpuName('3090ti')).not.toBe(normaliseGpuName('3090'))
    expect(normaliseGpuName('4070 super')).not.toBe(normaliseGpuName('4070'))
    expect(normaliseGpuName('GH200')).not.toBe(normaliseGpuName('H200'))
  })
})

describe('resolveTarget', () => {
  it.each([
    ['3090', 'rtx_3090'],
    ['rtx-3090', 'rtx_3090'],
    ['RTX 3090', 'rtx_3090'],
    ['rtx_3090', 'rtx_3090'],
    ['NVIDIA GeForce RTX 3090', 'rtx_3090'],
    ['3090ti', 'rtx_3090_ti'],
    ['3090 Ti', 'rtx_3090_ti'],
    ['RTX 4060 Ti 16GB', 'rtx_4060_ti_16g'],
    ['4060ti', 'rtx_4060_ti'],
    ['4090', 'rtx_4090'],
    ['t4', 't4'],
    ['Tesla T4', 't4'],
    ['a100', 'a100_40g'],
    ['a100-80g', 'a100_80g'],
    ['NVIDIA A100-SXM4-80GB', 'a100_80g'],
    ['h100', 'h100_sxm_80g'],
    ['NVIDIA H100 80GB HBM3', 'h100_sxm_80g'],
    ['h100-pcie', 'h100_pcie_80g'],
    ['h200', 'h200_sxm_141g'],
    ['gh200', 'gh200'],
    ['v100', 'v100_16g'],
    ['V100 32GB', 'v100_32g'],
    ['L40S', 'l40s'],
    ['a6000', 'rtx_a6000'],
    ['RTX 6000 Ada', 'rtx_6000_ada'],
    ['NVIDIA RTX 6000 Ada Generation', 'rtx_6000_ada'],
    ['1660 super', 'gtx_1660_super'],
  ])('%s -> %s', (query, key) => {
    expect(resolveTarget(catalog, query).key).toBe(key)
  })

  it('rejects an unknown name with suggestions', () => {
    const error = thrown(() => resolveTarget(catalog, '3091'))
    expect(error.code).toBe('UNKNOWN_GPU')
    expect(error.exit).toBe(2)
    expect(error.fix.join(' ')).toContain('rtx_3090')
  })

  it('still answers with a fix when nothing is close', () => {
    const error = thrown(() => resolveTarget(catalog, 'voodoo5-6000-agp-deluxe'))
    expect(error.code).toBe('UNKNOWN_GPU')
    expect(error.fix.length).toBe(1)
  })
})

describe('resolveHostModel', () => {
  it.each([
    ['h200', 'h200_sxm'],
    ['h200-sxm', 'h200_sxm'],
    ['H100 SXM', 'h100_sxm'],
    ['h100-pcie', 'h100_pcie'],
    ['a100', 'a100_40g'],
    ['a100-80gb', 'a100_80g'],
    ['gh200', 'gh200_96g'],
    ['l40s', 'l40s'],
  ])('%s -> %s', (query, key) => {
    expect(resolveHostModel(catalog, query).key).toBe(key)
  })

  it('rejects an unknown host model', () => {
    const error = thrown(() => resolveHostModel(catalog, 'h300'))
    expect(error.code).toBe('UNKNOWN_HOST_MODEL')
    expect(error.exit).toBe(2)
  })
})

describe('matchHostModel', () => {
  it.each([
    ['NVIDIA H200', 'h200_sxm'],
    ['NVIDIA H100 80GB HBM3', 'h100_sxm'],
    ['NVIDIA H100 PCIe', 'h100_pcie'],
    ['NVIDIA H100 NVL', 'h100_nvl'],
    ['NVIDIA A100-SXM4-80GB', 'a100_80g'],
    ['NVIDIA A100-PCIE-40GB', 'a100_40g'],
    ['NVIDIA A100 80GB PCIe', 'a100_80g'],
    ['NVIDIA A30', 'a30'],
    ['NVIDIA GH200 480GB', 'gh200_96g'],
    ['NVIDIA L40S', 'l40s'],
    ['  nvidia h200  ', 'h200_sxm'],
  ])('%s -> %s', (smiName, key) => {
    expect(matchHostModel(catalog, smiName)?.key).toBe(key)
  })

  it('never takes a GH200 for an H200', () => {
    expect(matchHostModel(catalog, 'NVIDIA GH200 480GB')?.key).not.toBe('h200_sxm')
    expect(matchHostModel(catalog, 'NVIDIA GH200 144G HBM3e')).toBeNull()
  })

  it('returns null for GPUs it does not model', () => {
    expect(matchHostModel(catalog, 'NVIDIA GeForce RTX 4090')).toBeNull()
    expect(matchHostModel(catalog, 'NVIDIA L40')).toBeNull()
  })
})
