/**
 * oclif re-wraps descriptions to the terminal width; a description that is hard-wrapped in the source comes
 * out as ragged lines. Descriptions are one line per paragraph, paragraphs separated by a blank line.
 */
import {spawnSync} from 'node:child_process'

import {expect, it} from '@jest/globals'

import {ROOT} from './support/run-cli.js'

function descriptions(): Record<string, string> {
  const script = `
    const {COMMANDS} = await import('./dist/cli.js')
    process.stdout.write(JSON.stringify(Object.fromEntries(Object.entries(COMMANDS).map(([id, C]) => [id, C.description ?? '']))))`
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {cwd: ROOT, encoding: 'utf8'})
  if (result.status !== 0) throw new Error(`cannot load dist/cli.js (run npm run build): ${result.stderr}`)
  return JSON.parse(result.stdout)
}

it('every description is one line per paragraph (no hard wraps for oclif to re-wrap)', () => {
  const wrapped = Object.entries(descriptions())
    .filter(([, text]) => text.split('\n\n').some((paragraph) => paragraph.includes('\n')))
    .map(([id]) => id)
  expect(wrapped).toEqual([])
})
