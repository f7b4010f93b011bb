/**
 * A staging bind keeps what its source's mount restricts: a folder on a read-only or noexec mount is bound read-only
 * and noexec however the member asked, and the remount names those flags itself (mount(8) versions differ in what a
 * `remount,bind` keeps). Real mounts: root only, as CI runs the tests.
 */
import {spawnSync} from 'node:child_process'
import {closeSync, mkdirSync, mkdtempSync, openSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterEach, describe, expect, it} from '@jest/globals'

import {bindDescriptor, mountOptionsOf, mountPoints, sourceRestrictions, unmountAll} from '../../../src/container/bind-mount.js'
import type {Executor} from '../../../src/core/executor.js'
import {LocalExecutor} from '../../../src/core/local-executor.js'

const asRoot = process.getuid?.() === 0 ? it : it.skip

describe('mountinfo', () => {
  const info = [
    '36 35 98:0 /mnt1 /mnt/a rw,noatime master:1 - ext3 /dev/root rw,errors=continue',
    '37 36 98:0 /x /mnt/with\\040space ro,nosuid,noexec shared:2 - tmpfs tmpfs ro',
    '38 36 98:0 /y /mnt/a ro,relatime - tmpfs tmpfs rw',
  ].join('\n')

  it('reads each mount point, escapes undone, and the options of the topmost mount there', () => {
    expect(mountPoints(info)).toEqual(['/mnt/a', '/mnt/with space', '/mnt/a'])
    expect(mountOptionsOf('/mnt/with space', info)).toEqual(['ro', 'nosuid', 'noexec'])
    expect(mountOptionsOf('/mnt/a', info)).toEqual(['ro', 'relatime'])
    expect(mountOptionsOf('/nowhere', info)).toEqual([])
    expect(sourceRestrictions(['rw', 'nosuid', 'noexec', 'relatime'])).toEqual(['noexec'])
  })
})

describe('bindDescriptor', () => {
  let base: string | null = null
  afterEach(() => {
    if (base === null) return
    for (const point of mountPoints()
      .filter((p) => p.startsWith(`${base}/`))
      .reverse())
      spawnSync('umount', ['-l', point])
    rmSync(base, {recursive: true, force: true})
    base = null
  })

  asRoot('binds a folder of a read-only, noexec mount read-only and noexec, naming both in its remount', async () => {
    base = mkdtempSync(join(tmpdir(), 'gpu-cosplay-bind-'))
    const fsDir = join(base, 'fs')
    const target = join(base, 'target')
    mkdirSync(fsDir)
    mkdirSync(target)
    expect(spawnSync('mount', ['-t', 'tmpfs', 'tmpfs', fsDir]).status).toBe(0)
    mkdirSync(join(fsDir, 'ws'))
    expect(spawnSync('mount', ['-o', 'remount,ro,noexec', fsDir]).status).toBe(0)

    const local = new LocalExecutor()
    const calls: string[][] = []
    const executor: Executor = {run: (argv, options) => (calls.push([...argv]), local.run(argv, options))}
    const fd = openSync(join(fsDir, 'ws'), 'r')
    try {
      await bindDescriptor(executor, fd, target, {readOnly: false})
    } finally {
      closeSync(fd)
    }
    const remount = calls.find((c) => c.includes('-o'))!
    expect(remount[remount.indexOf('-o') + 1].split(',')).toEqual(expect.arrayContaining(['remount', 'bind', 'nosuid', 'nodev', 'ro', 'noexec']))
    expect(mountOptionsOf(target)).toEqual(expect.arrayContaining(['ro', 'noexec', 'nosuid', 'nodev']))
    await unmountAll(local, target)
    expect(mountPoints()).not.toContain(target)
  })
})
