import {mkdirSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

import {afterAll, describe, expect, it, jest} from '@jest/globals'

import {baseEnv, cleanupTemps, runCli, runJson} from './support/run-cli.js'

jest.setTimeout(60_000)
afterAll(cleanupTemps)

const TARGET_KEYS = ['key', 'name', 'fp32Tflops', 'bf16Tflops', 'bandwidthGBs', 'vramGB', 'tdpW', 'smCount', 'aliases', 'arch']

describe('ls', () => {
  it('lists at least 60 targets with the plan --json field names', () => {
    const {exitCode, json} = runJson<Record<string, unknown>[]>(['ls'])
    expect(exitCode).toBe(0)
    expect(Array.isArray(json)).toBe(true)
    expect(json.length).toBeGreaterThanOrEqual(60)
    for (const target of json) for (const key of TARGET_KEYS) expect(target).toHaveProperty(key)
    expect(new Set(json.map((t) => t.key)).size).toBe(json.length)
  })

  it('--arch keeps only that architecture', () => {
    const all = runJson<{key: string; arch: string}[]>(['ls']).json
    const {exitCode, json} = runJson<{key: string; arch: string}[]>(['ls', '--arch', 'ada'])
    expect(exitCode).toBe(0)
    expect(json.length).toBeGreaterThan(5)
    expect(json.every((t) => t.arch === 'ada')).toBe(true)
    expect(json.map((t) => t.key)).toEqual(all.filter((t) => t.arch === 'ada').map((t) => t.key))
    expect(json.map((t) => t.key)).toContain('rtx_4090')
  })

  it('prints a table without --json', () => {
    const {exitCode, stdout} = runCli(['ls', '--arch', 'turing'])
    expect(exitCode).toBe(0)
    expect(stdout.split('\n')[0]).toMatch(/^KEY\s+NAME\s+ARCH/)
    expect(stdout).toMatch(/\bt4\b/)
  })
})

describe('info', () => {
  it.each(['3090', 'rtx-3090', 'RTX 3090', 'rtx_3090', 'geforce rtx 3090'])('resolves %p to the RTX 3090', (name) => {
    const {exitCode, json} = runJson<{key: string; name: string; vramGB: number}>(['info', name])
    expect(exitCode).toBe(0)
    expect(json.key).toBe('rtx_3090')
    expect(json.vramGB).toBe(24)
  })

  it('resolves 3090ti to the 3090 Ti, not the 3090', () => {
    const {exitCode, json} = runJson<{key: string; name: string}>(['info', '3090ti'])
    expect(exitCode).toBe(0)
    expect(json.key).not.toBe('rtx_3090')
    expect(json.name).toMatch(/3090 Ti/)
  })

  it('uses the same record as ls', () => {
    const fromLs = runJson<{key: string}[]>(['ls']).json.find((t) => t.key === 'rtx_3090')
    expect(runJson(['info', '3090']).json).toEqual(fromLs)
  })

  it('adds a target from a user catalog file in $XDG_CONFIG_HOME/gpu-cosplay/catalog.d', () => {
    const base = runJson<Record<string, unknown>>(['info', '3090']).json
    const env = baseEnv()
    const dir = join(env.XDG_CONFIG_HOME!, 'gpu-cosplay', 'catalog.d')
    mkdirSync(dir, {recursive: true})
    const mine = {...base, key: 'my_card', name: 'My Card', aliases: ['mycard']}
    writeFileSync(join(dir, 'mine.yaml'), JSON.stringify({version: 1, targets: [mine]}))
    const {exitCode, json} = runJson<{key: string; name: string}>(['info', 'My-Card'], env)
    expect(exitCode).toBe(0)
    expect(json).toMatchObject({key: 'my_card', name: 'My Card'})
    expect(runJson<{key: string}[]>(['ls'], env).json.map((t) => t.key)).toContain('my_card')
  })
})
