import {readFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'
import {load} from 'js-yaml'

import {cleanupTemps, runCli, runJson, tempDir} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

const GOLDEN = join(process.cwd(), 'test', 'fixtures', 'export')
const IMAGE = ['--image', 'gpu-cosplay:0.1.0']

describe('plan -o (the built CLI)', () => {
  it.each([
    ['mig-parted', 'h200-3090.mig-parted.yaml'],
    ['k8s', 'h200-3090.k8s.yaml'],
    ['slurm', 'h200-3090.slurm.conf'],
  ])('plan 3090 --on h200 -o %s prints %s exactly', (format, file) => {
    const {exitCode, stdout, stderr} = runCli(['plan', '3090', '--on', 'h200', '-o', format, ...IMAGE])
    expect({exitCode, stderr}).toEqual({exitCode: 0, stderr: ''})
    expect(stdout).toBe(readFileSync(join(GOLDEN, file), 'utf8'))
  })

  it('--out writes the file and prints nothing; --json then prints the plan', () => {
    const out = join(tempDir(), 'cosplay.yaml')
    const {exitCode, json} = runJson(['plan', '3090', '--on', 'h200', '-o', 'k8s', '--out', out, ...IMAGE])
    expect(exitCode).toBe(0)
    expect(json.target.key).toBe('rtx_3090')
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(join(GOLDEN, 'h200-3090.k8s.yaml'), 'utf8'))
  })

  it('--mix packs several targets; the output parses', () => {
    // the packing goldens were made on datasheet plans (test/unit/export/render-exports.test.ts)
    const {exitCode, stdout} = runCli(['plan', '3090', '--on', 'h200', '-o', 'mig-parted', '--mix', '3090x2,t4x3', '--datasheet'])
    expect(exitCode).toBe(0)
    expect(stdout).toBe(readFileSync(join(GOLDEN, 'h200-mix-3090x2-t4x3.mig-parted.yaml'), 'utf8'))
    expect(load(stdout)).toMatchObject({version: 'v1'})
  })

  it('--mix 4090x3 moves all three to 2g.35gb, where 3g.71gb fits only twice, and says so', () => {
    const {exitCode, stdout, stderr} = runCli(['plan', '4090', '--on', 'h200', '-o', 'mig-parted', '--mix', '4090x3', '--datasheet'])
    expect({exitCode, stderr}).toEqual({exitCode: 0, stderr: ''})
    expect(stdout).toBe(readFileSync(join(GOLDEN, 'h200-mix-4090x3.mig-parted.yaml'), 'utf8'))
    expect(load(stdout)).toMatchObject({'mig-configs': {'gpu-cosplay-rtx-4090x3': [{'mig-devices': {'2g.35gb': 3}}]}})
  })

  it.each([
    [['--mix', '3090x2,t4x5'], 'MIX_DOES_NOT_FIT'],
    [['--mix', '3090x5'], 'MIX_DOES_NOT_FIT'],
    [['--mix', 't4x9'], 'BAD_MIX'],
  ])('refuses %j with %s, exit 2, one line on stderr', (extra, code) => {
    const text = runCli(['plan', '3090', '--on', 'h200', '-o', 'mig-parted', ...extra])
    expect(text.exitCode).toBe(2)
    expect(text.stdout).toBe('')
    expect(text.stderr.trimEnd().split('\n')).toHaveLength(1)
    const {exitCode, json} = runJson(['plan', '3090', '--on', 'h200', '-o', 'mig-parted', '--out', join(tempDir(), 'x.yaml'), ...extra])
    expect({exitCode, code: json.error.code}).toEqual({exitCode: 2, code})
  })

  it('-o with --json and no --out is refused (both would write stdout)', () => {
    const {exitCode, json} = runJson(['plan', '3090', '--on', 'h200', '-o', 'slurm'])
    expect({exitCode, code: json.error.code}).toEqual({exitCode: 2, code: 'OUTPUT_NEEDS_FILE'})
  })

  it('export flags need -o', () => {
    const {exitCode} = runCli(['plan', '3090', '--on', 'h200', '--mix', 't4x2'])
    expect(exitCode).toBe(2)
  })
})
