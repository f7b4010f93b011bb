import {mkdirSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterEach, expect, it} from '@jest/globals'

import {installedReaper, installReaper, reaperKind, removeReaper} from '../../../src/system/reaper-timer.js'

let base: string
afterEach(() => rmSync(base, {recursive: true, force: true}))

function paths() {
  base = mkdtempSync(join(tmpdir(), 'gpu-cosplay-reaper-'))
  return {systemdRun: join(base, 'run-systemd'), systemdDir: join(base, 'systemd'), cronDir: join(base, 'cron.d')}
}
const ENGINE = '/usr/local/libexec/gpu-cosplay/engine'

it('prefers systemd, else cron, else says there is none', async () => {
  const p = paths()
  expect(reaperKind(p)).toBe('none')
  expect(await installReaper(ENGINE, {run: async () => ({exitCode: 0, stdout: '', stderr: '', timedOut: false})}, p)).toEqual({kind: 'none', items: []})
  expect(installedReaper(ENGINE, p).kind).toBe('none')
  mkdirSync(p.cronDir)
  expect(reaperKind(p)).toBe('cron')
  mkdirSync(p.systemdRun)
  expect(reaperKind(p)).toBe('systemd')
})

it('a cron entry runs the engine as root every minute; a second install changes nothing; uninstall removes it', async () => {
  const p = paths()
  mkdirSync(p.cronDir)
  const ran: string[][] = []
  const executor = {run: async (argv: readonly string[]) => (ran.push([...argv]), {exitCode: 0, stdout: '', stderr: '', timedOut: false})}
  const first = await installReaper(ENGINE, executor, p)
  expect(first.items).toMatchObject([{action: 'created'}])
  expect(readFileSync(join(p.cronDir, 'gpu-cosplay-reap'), 'utf8')).toContain(`* * * * * root ${ENGINE} system reap`)
  expect((await installReaper(ENGINE, executor, p)).items).toMatchObject([{action: 'unchanged'}])
  expect(installedReaper(ENGINE, p).kind).toBe('cron')
  expect(await removeReaper(executor, p)).toEqual([join(p.cronDir, 'gpu-cosplay-reap')])
  expect(ran).toEqual([])
})

it('under systemd: a service and a 30 s timer, enabled', async () => {
  const p = paths()
  mkdirSync(p.systemdRun)
  mkdirSync(p.systemdDir)
  const ran: string[][] = []
  const executor = {run: async (argv: readonly string[]) => (ran.push([...argv]), {exitCode: 0, stdout: '', stderr: '', timedOut: false})}
  await installReaper(ENGINE, executor, p)
  expect(readFileSync(join(p.systemdDir, 'gpu-cosplay-reap.service'), 'utf8')).toContain(`ExecStart=${ENGINE} system reap`)
  expect(readFileSync(join(p.systemdDir, 'gpu-cosplay-reap.timer'), 'utf8')).toContain('OnUnitActiveSec=30s')
  expect(ran).toEqual([
    ['systemctl', 'daemon-reload'],
    ['systemctl', 'enable', '--now', 'gpu-cosplay-reap.timer'],
  ])
  expect(installedReaper(ENGINE, p)).toEqual({kind: 'systemd', path: join(p.systemdDir, 'gpu-cosplay-reap.timer')})
})
