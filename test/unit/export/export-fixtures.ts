import {existsSync, mkdirSync, readFileSync, writeFileSync} from 'node:fs'
import {dirname, join} from 'node:path'

import {load, loadAll} from 'js-yaml'
import * as z from 'zod'

/** Golden files under test/fixtures/export; UPDATE_GOLDEN=1 rewrites them (review the diff before committing). */
export const GOLDEN_DIR = join(process.cwd(), 'test', 'fixtures', 'export')

export function golden(name: string, actual: string): string {
  const path = join(GOLDEN_DIR, name)
  if (process.env.UPDATE_GOLDEN === '1') {
    mkdirSync(dirname(path), {recursive: true})
    writeFileSync(path, actual)
  }
  // a missing golden fails: writing it here would compare the output with itself
  if (!existsSync(path)) throw new Error(`golden file ${path} is missing: run with UPDATE_GOLDEN=1 to write it, then review it`)
  return readFileSync(path, 'utf8')
}

/**
 * mig-parted's `version: v1` spec as its own Go parser reads it (api/spec/v1/spec.go: unknown fields are
 * errors; devices is "all" or a list of ints; device-filter a string or list; mig-devices required when
 * mig-enabled; types.MigConfig: profile name -> count).
 */
const migConfigSpec = z.strictObject({
  'device-filter': z.union([z.string(), z.array(z.string().regex(/^0x[0-9A-F]{8}$/))]).optional(),
  devices: z.union([z.literal('all'), z.array(z.number().int().nonnegative())]),
  'mig-enabled': z.boolean(),
  'mig-devices': z.record(z.string().regex(/^\d+g\.\d+gb(\+me)?$/), z.number().int().positive()),
})
export const migPartedSpec = z.strictObject({
  version: z.literal('v1'),
  'mig-configs': z.record(z.string(), z.array(migConfigSpec).min(1)),
})

export function parseMigParted(text: string): z.infer<typeof migPartedSpec> {
  return migPartedSpec.parse(load(text))
}

export function yamlDocuments(text: string): Record<string, any>[] {
  return loadAll(text) as Record<string, any>[]
}

export type SlurmParts = Map<string, string[]>

/**
 * A strict reader for the -o slurm bundle: parts open with `# ==> NAME <==`; config parts hold only
 * `Key=Value` tokens (known keys, no stray words); scripts start with a shebang. Throws on anything else.
 */
export function parseSlurmBundle(text: string): {parts: SlurmParts; conf: Map<string, string[][]>} {
  const parts: SlurmParts = new Map()
  let current: string[] | null = null
  for (const line of text.split('\n')) {
    const marker = /^# ==> (.+) <==$/.exec(line)
    if (marker) {
      if (parts.has(marker[1])) throw new Error(`part ${marker[1]} twice`)
      current = []
      parts.set(marker[1], current)
    } else if (current) {
      current.push(line)
    } else if (line !== '' && !line.startsWith('#')) {
      throw new Error(`text outside a part: ${line}`)
    }
  }
  const known: Record<string, RegExp> = {
    AutoDetect: /^(nvml|off|rsmi|nrt|oneapi)$/,
    GresTypes: /^[a-z]+(,[a-z]+)*$/,
    AccountingStorageTRES: /^gres\/gpu(,gres\/gpu:[A-Za-z0-9_.+-]+)*$/,
    NodeName: /^[A-Za-z0-9_.\-[\],]+$/,
    Gres: /^gpu(:[A-Za-z0-9_.+-]+)?:\d+(,gpu(:[A-Za-z0-9_.+-]+)?:\d+)*$/,
    Prolog: /^\/\S+$/,
    Epilog: /^\/\S+$/,
    TaskProlog: /^\/\S+$/,
  }
  const conf = new Map<string, string[][]>()
  for (const name of ['gres.conf', 'slurm.conf']) {
    const lines = (parts.get(name) ?? []).filter((l) => l.trim() !== '' && !l.startsWith('#'))
    conf.set(
      name,
      lines.map((line) =>
        line.split(/\s+/).map((token) => {
          const m = /^([A-Za-z]+)=(.+)$/.exec(token)
          if (!m || !known[m[1]]?.test(m[2])) throw new Error(`${name}: bad token ${token} in: ${line}`)
          return `${m[1]}=${m[2]}`
        }),
      ),
    )
  }
  for (const [name, lines] of parts) {
    if (name.endsWith('.sh') && lines[0] !== '#!/bin/sh') throw new Error(`${name} has no shebang`)
  }
  return {parts, conf}
}
