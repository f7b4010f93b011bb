import {spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {costumeEnv, memFraction} from '../../../src/plan/costume-env.js'
import {planCosplay} from '../../../src/plan/plan-cosplay.js'
import {planHostFromModel} from '../../../src/plan/plan-host.js'
import type {Plan} from '../../../src/plan/types.js'
import {builtinCatalog} from './catalog-for-tests.js'
import {physicalMiBOf} from '../../../src/plan/physical-memory.js'

type Case = {case: string; env: Record<string, string>}

/** Every (host model x target) plan the planner makes, with the costume env `up` would give its container. */
function everyCostume(): Case[] {
  const catalog = builtinCatalog()
  const cases: Case[] = []
  for (const model of catalog.hosts) {
    for (const target of catalog.targets) {
      let plan: Plan
      try {
        plan = planCosplay(target, planHostFromModel(model))
      } catch {
        continue // a target this host cannot imitate has no costume
      }
      // what bring-up passes as the physical figure: the slice's memory, or the whole GPU's
      const physicalMiB = physicalMiBOf(plan, Math.round(model.memoryGiB * 1024))
      cases.push({case: `${target.key} on ${model.key}`, env: costumeEnv(plan, {hasTf32: target.tf32Tflops !== null}, physicalMiB, 'contract')})
    }
  }
  return cases
}

describe('the costume contract between costumeEnv() and runtime-hooks/', () => {
  it('verify.py passes its JAX/CuPy check for every target on every host model', () => {
    const cases = everyCostume()
    const catalog = builtinCatalog()
    expect(cases.length).toBeGreaterThan(catalog.targets.length)
    const dir = mkdtempSync(join(tmpdir(), 'gpu-cosplay-contract-'))
    try {
      const file = join(dir, 'costumes.json')
      writeFileSync(file, JSON.stringify(cases))
      const result = spawnSync('python3', [join('test', 'py', 'check_costume_contract.py'), file], {encoding: 'utf8'})
      expect(result.stderr).toBe('')
      const report = JSON.parse(result.stdout)
      expect(report).toEqual({checked: cases.length, failures: []})
      expect(result.status).toBe(0)
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it.each([
    [12288, 24576, '0.5000'],
    [24576, 40448, '0.6075'],
    [24576, 24576, '1.0000'],
    [30000, 24576, '1.0000'],
    [1, 143771, '0.0001'],
  ])('memFraction(%d, %d) is %s, as gpu_cosplay_env.py prints it', (cap, phys, want) => {
    expect(memFraction(cap, phys)).toBe(want)
  })
})
