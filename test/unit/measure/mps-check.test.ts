import {execFileSync, spawnSync} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

import {afterAll, describe, expect, it} from '@jest/globals'

import {
  isPinnedLimit,
  MPS_PROBE,
  mpsChecks,
  mpsChecksSkipped,
  type MpsProbe,
  parseMpsProbe,
  parsePinnedMemLimit,
  type ProbedShell,
} from '../../../src/measure/mps-check.js'

const WANTED = {activeThreadPercentage: 52, pinnedMemLimitMiB: 2048}
const good: MpsProbe = {
  pipeDirectory: '/run/gpu-cosplay/mps/pipe',
  control: '/usr/bin/nvidia-cuda-mps-control',
  threadPercentage: {exitCode: 0, text: '52.0'},
  pinnedMemLimit: {exitCode: 0, text: '2G'},
}
const both = (login: MpsProbe, command: MpsProbe = login): ProbedShell[] => [
  {check: 'mps.login_shell', label: 'ssh login shell', probe: login},
  {check: 'mps.command', label: 'ssh command', probe: command},
]

describe('get_default_device_pinned_mem_limit, as the driver prints it', () => {
  it.each([
    ['2G', {mib: 2048, resolutionMiB: 1024}],
    ['900M', {mib: 900, resolutionMiB: 1}],
    ['24G', {mib: 24576, resolutionMiB: 1024}],
    ['1.5G', {mib: 1536, resolutionMiB: 102.4}],
    ['0M', {mib: 0, resolutionMiB: 1}],
    [' 512M\n', {mib: 512, resolutionMiB: 1}],
  ])('%j', (text, parsed) => {
    const got = parsePinnedMemLimit(text)!
    expect(got.mib).toBeCloseTo(parsed.mib, 6)
    expect(got.resolutionMiB).toBeCloseTo(parsed.resolutionMiB, 6)
  })

  it.each(['', 'unlimited', '2', 'G', 'Cannot find MPS control daemon process', '-1G'])('%j is no amount', (text) =>
    expect(parsePinnedMemLimit(text)).toBeNull(),
  )

  // the real driver shows whole GiB from 1 GiB up, rounded down: what was set lies in [shown, shown + 1 GiB)
  it.each([
    ['2G', 2048, true],
    ['2G', 2560, true],
    ['2G', 3071, true],
    ['2G', 3072, false],
    ['2G', 2047, false],
    ['24G', 25088, true],
    ['900M', 900, true],
    ['900M', 901, false],
    ['1.5G', 1536, true],
    ['1.5G', 1700, false],
  ] as const)('%s shows a limit of %d MiB: %s', (text, planned, matches) => expect(isPinnedLimit(parsePinnedMemLimit(text)!, planned)).toBe(matches))
})

describe("verify's MPS checks", () => {
  it('PASS from both shells when each reaches the daemon with the plan', () => {
    expect(mpsChecks(WANTED, both(good)).map((c) => [c.name, c.status])).toEqual([
      ['mps.login_shell', 'PASS'],
      ['mps.command', 'PASS'],
    ])
  })

  it.each([
    [{...good, threadPercentage: {exitCode: 0, text: '100.0'}}, /active thread percentage is 100\.0, planned 52/],
    [{...good, pinnedMemLimit: {exitCode: 0, text: '4G'}}, /pinned device memory limit is 4G, planned 2048 MiB/],
    [{...good, pinnedMemLimit: {exitCode: 0, text: '0M'}}, /no pinned device memory limit .*0M/],
    [{...good, pipeDirectory: null}, /CUDA_MPS_PIPE_DIRECTORY is not set/],
    [{...good, control: null}, /no nvidia-cuda-mps-control on PATH/],
    [
      {...good, threadPercentage: {exitCode: 1, text: 'Cannot find MPS control daemon process'}},
      /no MPS daemon answers in \/run\/gpu-cosplay\/mps\/pipe: Cannot find/,
    ],
    [{...good, error: 'exit 255: ssh refused'}, /the probe did not run: exit 255/],
  ])('FAIL with the reason: %j', (probe, reason) => {
    const checks = mpsChecks(WANTED, both(probe))
    for (const check of checks) expect(check).toMatchObject({status: 'FAIL', detail: expect.stringMatching(reason)})
    expect(checks[0].detail).toMatch(/^ssh login shell: /)
    expect(checks[1].detail).toMatch(/^ssh command: /)
  })

  it('FAIL when the command reaches another pipe directory than the login shell', () => {
    const [login, command] = mpsChecks(WANTED, both(good, {...good, pipeDirectory: '/tmp/nvidia-mps'}))
    expect(login.status).toBe('PASS')
    expect(command).toMatchObject({status: 'FAIL', detail: expect.stringMatching(/\/tmp\/nvidia-mps here, \/run\/gpu-cosplay\/mps\/pipe in ssh login shell/)})
  })

  it('SKIP, saying why, for a session planned without MPS', () => {
    expect(mpsChecksSkipped()).toEqual([
      {name: 'mps.login_shell', status: 'SKIP', detail: expect.stringMatching(/planned without MPS/)},
      {name: 'mps.command', status: 'SKIP', detail: expect.stringMatching(/planned without MPS/)},
    ])
  })
})

describe('the probe, run by sh against the MPS stand-in', () => {
  const SIM_DIR = join(process.cwd(), 'test', 'sim')
  const dir = mkdtempSync(join(tmpdir(), 'mps-probe-'))
  const pipe = join(dir, 'pipe')
  const env = {PATH: `${SIM_DIR}:/usr/bin:/bin`, CUDA_MPS_PIPE_DIRECTORY: pipe, CUDA_MPS_LOG_DIRECTORY: join(dir, 'log')}
  const probe = (extra: Record<string, string | undefined> = {}) =>
    parseMpsProbe(execFileSync('sh', ['-c', MPS_PROBE], {env: {...env, ...extra}, encoding: 'utf8'}))
  afterAll(() => {
    spawnSync(join(SIM_DIR, 'nvidia-cuda-mps-control'), [], {input: 'quit\n', env})
    rmSync(dir, {recursive: true, force: true})
  })

  it('reads what the daemon holds, as the real driver prints it, and sees no daemon without one', () => {
    expect(probe()).toMatchObject({pipeDirectory: pipe, threadPercentage: {exitCode: 1, text: 'Cannot find MPS control daemon process'}})
    execFileSync(join(SIM_DIR, 'nvidia-cuda-mps-control'), ['-d'], {env})
    execFileSync(join(SIM_DIR, 'nvidia-cuda-mps-control'), [], {
      env,
      input: 'set_default_active_thread_percentage 52\nset_default_device_pinned_mem_limit 0 2048M\n',
    })
    const seen = probe()
    expect(seen).toEqual({
      pipeDirectory: pipe,
      control: join(SIM_DIR, 'nvidia-cuda-mps-control'),
      threadPercentage: {exitCode: 0, text: '52.0'},
      pinnedMemLimit: {exitCode: 0, text: '2G'},
    })
    expect(mpsChecks(WANTED, both(seen)).map((c) => c.status)).toEqual(['PASS', 'PASS'])
    const elsewhere = parseMpsProbe(execFileSync('sh', ['-c', MPS_PROBE], {env: {PATH: env.PATH}, encoding: 'utf8'}))
    expect(elsewhere.pipeDirectory).toBeNull()
  })
})
