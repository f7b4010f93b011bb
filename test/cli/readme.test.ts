import {spawnSync} from 'node:child_process'
import {mkdirSync, readdirSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, expect, it, jest} from '@jest/globals'

import {baseEnv, cleanupTemps, ROOT, runJson, tempDir} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

/** README.md and every page under docs/, as the text a reader sees. */
function docs(): {file: string; text: string}[] {
  const pages = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
  return ['README.md', ...pages.map((name) => join('docs', name))].map((file) => ({file, text: readFileSync(join(ROOT, file), 'utf8')}))
}

it("docs/catalog.md's example user catalog file loads, and its target can be shown and planned", () => {
  const catalog = readFileSync(join(ROOT, 'docs', 'catalog.md'), 'utf8')
  const yaml = /```yaml\n([\s\S]*?)```/.exec(catalog)?.[1]
  expect(yaml).toContain('targets:')
  const dir = tempDir()
  mkdirSync(dir, {recursive: true})
  writeFileSync(join(dir, 'example.yaml'), yaml!)
  const env = baseEnv({GPU_COSPLAY_CATALOG_DIR: dir})
  const info = runJson(['info', 'a2000'], env)
  expect(info.exitCode).toBe(0)
  expect(info.json.key).toBe('rtx_a2000')
  const plan = runJson(['plan', 'a2000', '--on', 'h200'], env)
  expect(plan.exitCode).toBe(0)
})

it("docs/commands.md's command reference is what npm run readme generates from the commands", () => {
  const result = spawnSync(process.execPath, [join(ROOT, 'scripts', 'readme.mjs'), '--check'], {cwd: ROOT, encoding: 'utf8'})
  expect(result.stderr).toBe('')
  expect(result.status).toBe(0)
})

it("every example in the README and docs/ that shows a command's output (`$ gpu-cosplay ...` and the lines after it) is what the command prints", () => {
  const shown = docs()
    .flatMap(({file, text}) => [...text.matchAll(/```\n\$ gpu-cosplay ([^\n]+)\n([\s\S]*?)```/g)].map((m) => ({file, argv: m[1].split(' '), output: m[2]})))
    .filter((e) => e.output.trim() !== '' && !/^\$ /m.test(e.output))
  expect(shown.length).toBeGreaterThan(0)
  for (const {file, argv, output} of shown) {
    const ran = spawnSync(process.execPath, [join(ROOT, 'bin', 'run.js'), ...argv], {cwd: ROOT, env: baseEnv({COLUMNS: '120'}), encoding: 'utf8'})
    expect({file, argv, status: ran.status, output: ran.stdout}).toEqual({file, argv, status: 0, output})
  }
})
