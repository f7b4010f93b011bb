/**
 * Each command's flags, args and --json keys, compared with the committed command-snapshot.json, so that
 * renaming a flag or a JSON field is a visible decision. The file is written when missing; to accept a
 * deliberate change, delete it and rerun.
 */
import {spawnSync} from 'node:child_process'
import {existsSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, expect, it, jest} from '@jest/globals'

import {cleanupTemps, ROOT, runJson, Sim} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

const SNAPSHOT = join(ROOT, 'test', 'cli', 'command-snapshot.json')
const BOX_CONFIG = '/etc/gpu-cosplay/config.yaml'

/** Reads the static metadata of the BUILT command classes (dist/cli.js's COMMANDS). */
function commandShapes(): Record<string, unknown> {
  const script = `
    const {COMMANDS} = await import('./dist/cli.js')
    const pick = (o, keys) => Object.fromEntries(keys.filter((k) => o[k] !== undefined && !(Array.isArray(o[k]) && o[k].length === 0)).map((k) => [k, o[k]]))
    const out = {}
    for (const [id, C] of Object.entries(COMMANDS).sort(([a], [b]) => a.localeCompare(b))) {
      const flags = Object.fromEntries(Object.entries(C.flags ?? {}).sort(([a], [b]) => a.localeCompare(b))
        .map(([name, f]) => [name, pick(f, ['type', 'char', 'options', 'default', 'multiple', 'required', 'exclusive', 'dependsOn', 'min', 'max'])]))
      const args = Object.fromEntries(Object.entries(C.args ?? {}).map(([name, a]) => [name, pick(a, ['required', 'options', 'default'])]))
      out[id] = {enableJsonFlag: Boolean(C.enableJsonFlag), args, flags}
    }
    process.stdout.write(JSON.stringify(out))`
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {cwd: ROOT, encoding: 'utf8'})
  if (result.status !== 0) throw new Error(`cannot load dist/cli.js (run npm run build): ${result.stderr}`)
  return JSON.parse(result.stdout)
}

/** Every key path in a JSON value; array elements are merged under "[]". */
function keyPaths(value: unknown, prefix = ''): string[] {
  if (Array.isArray(value)) return [...new Set(value.flatMap((v) => keyPaths(v, `${prefix}[]`)))].sort()
  if (value !== null && typeof value === 'object') {
    return Object.entries(value)
      .flatMap(([k, v]) => [`${prefix}${prefix ? '.' : ''}${k}`, ...keyPaths(v, `${prefix}${prefix ? '.' : ''}${k}`)])
      .filter((p, i, all) => all.indexOf(p) === i)
      .sort()
  }
  return []
}

function jsonShapes(): Record<string, string[]> {
  const sim = Sim.create('h200', 2).enableMig(0)
  const env = sim.env()
  return {
    ls: keyPaths(runJson(['ls'], env).json),
    info: keyPaths(runJson(['info', '3090'], env).json),
    'plan --on': keyPaths(runJson(['plan', '3090', '--on', 'h200'], env).json),
    'plan --host-gpu': keyPaths(runJson(['plan', '3090', '--host-gpu', '0'], env).json),
    doctor: keyPaths(runJson(['doctor'], env).json),
    'lease hold': keyPaths(runJson(['lease', 'hold', '--host-gpu', '1', '--clock-mhz', '1395', '--holder', 'snapshot'], env).json),
    'lease release': keyPaths(runJson(['lease', 'release', '--host-gpu', '1', '--holder', 'snapshot'], env).json),
    // the shape of "not installed"; a box installed on this machine (an e2e run beside this one) has another
    ...(existsSync(BOX_CONFIG) ? {} : {'system status': keyPaths(runJson(['system', 'status'], env).json)}),
    error: keyPaths(runJson(['info', 'voodoo5'], env).json),
  }
}

it('flags, args and --json keys match command-snapshot.json', () => {
  const current = {commands: commandShapes(), json: jsonShapes()}
  if (!existsSync(SNAPSHOT)) {
    writeFileSync(SNAPSHOT, `${JSON.stringify(current, null, 2)}\n`)
    console.warn(`wrote ${SNAPSHOT}; commit it`)
    return
  }
  const expected = JSON.parse(readFileSync(SNAPSHOT, 'utf8'))
  if (existsSync(BOX_CONFIG)) delete expected.json['system status']
  expect(current).toEqual(expected)
})
