import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import type {ExecResult, Executor} from '../../../src/core/executor.js'
import {isCosplayError} from '../../../src/core/errors.js'
import {SmiGpuControl} from '../../../src/host/gpu-control.js'
import {listComputeInstances, listGpuInstances, probeHost} from '../../../src/host/probe.js'
import {Smi} from '../../../src/host/smi.js'

const fixture = (name: string) => readFileSync(join('test/fixtures/nvidia-smi', name), 'utf8')

type Answer = {stdout?: string; stderr?: string; exitCode?: number}

/** Answers by argv (without the binary) and counts calls; an unscripted argv fails the test. */
class FixtureExecutor implements Executor {
  readonly seen: string[] = []
  constructor(private readonly answers: Record<string, Answer>) {}
  async run(argv: readonly string[]): Promise<ExecResult> {
    const key = argv.slice(1).join(' ')
    this.seen.push(key)
    const answer = this.answers[key]
    if (answer === undefined) throw new Error(`unscripted nvidia-smi call: ${key}`)
    return {exitCode: 0, stdout: '', stderr: '', timedOut: false, ...answer}
  }
}

/** No MIG-enabled -q capture exists, so MIG is switched on in a real one: only "MIG Mode / Current" of the chosen GPUs changes. */
function withMigEnabled(text: string, gpuIndices: readonly number[]): string {
  let gpu = -1
  let inMigMode = false
  return text
    .split('\n')
    .map((line) => {
      if (/^GPU [0-9A-F]{8}:/.test(line)) gpu += 1
      if (/^ {4}MIG Mode\s*$/.test(line)) {
        inMigMode = true
        return line
      }
      if (inMigMode && /^ {8}Current\s+: Disabled$/.test(line)) {
        inMigMode = false
        return gpuIndices.includes(gpu) ? line.replace('Disabled', 'Enabled') : line
      }
      return line
    })
    .join('\n')
}

/** The H100 -lgip capture is one GPU's; a copy relabelled as GPU 3 stands in for a second MIG GPU. */
function lgipFor(gpuIndices: readonly number[]): string {
  const one = fixture('h100-sxm-80gb__mig-lgip.txt')
  return gpuIndices.map((index) => one.replace(/^\| {3}0 {2}MIG/gm, `|   ${index}  MIG`)).join('')
}

const smiFor = (executor: Executor) => new Smi(executor, {path: 'nvidia-smi', sudo: false})

describe('probeHost', () => {
  test.each([
    {file: 'h200-sxm-141gb__nvidia-smi-a.txt', gpus: 1},
    {file: 'h100-sxm-80gb-x8__nvidia-smi-a.txt', gpus: 8},
    {file: 'rtx4090-x8__nvidia-smi-a.txt', gpus: 8},
  ])('MIG off on every GPU of $file: one call', async ({file, gpus}) => {
    const executor = new FixtureExecutor({'-q': {stdout: fixture(file)}})
    const probe = await probeHost(smiFor(executor))
    expect(executor.seen).toEqual(['-q'])
    expect(probe.smiCalls).toBe(1)
    expect(probe.gpus).toHaveLength(gpus)
    expect(probe.gpus.every((gpu) => gpu.migProfiles === null && gpu.gpuInstances.length === 0)).toBe(true)
  })

  test('H200 with MIG off: the model holds what -q printed', async () => {
    const probe = await probeHost(smiFor(new FixtureExecutor({'-q': {stdout: fixture('h200-sxm-141gb__nvidia-smi-a.txt')}})))
    expect(probe.driverVersion).toBe('550.90.12')
    expect(probe.cudaVersion).toBe('12.4')
    expect(probe.gpus[0]).toEqual({
      index: 0,
      name: 'NVIDIA H200',
      uuid: 'GPU-cb3dfa52-e2f3-9ca4-a399-7d16041c3732',
      busId: '00000000:03:00.0',
      persistenceMode: true,
      migMode: {current: 'disabled', pending: 'disabled'},
      power: {currentW: 700, requestedW: 700, defaultW: 700, minW: 200, maxW: 700},
      clocks: {maxGraphicsMHz: 1980, currentGraphicsMHz: 345},
      memoryTotalMiB: 143771,
      migProfiles: null,
      gpuInstances: [],
      processes: [],
      unavailable: [],
    })
  })

  test('one GPU with MIG on: three calls, and "No GPU instances found" is an empty list', async () => {
    const executor = new FixtureExecutor({
      '-q': {stdout: withMigEnabled(fixture('h200-sxm-141gb__nvidia-smi-a.txt'), [0])},
      'mig -lgip': {stdout: fixture('h200-sxm-141gb__mig-lgip-wide-81col-excerpt-from-unit-test.txt')},
      // nvidia-smi exits non-zero here although nothing is wrong.
      'mig -lgi': {stdout: fixture('a30__mig-lgi-no-gpu-instances-found.txt'), exitCode: 6},
    })
    const probe = await probeHost(smiFor(executor))
    expect(executor.seen).toEqual(['-q', 'mig -lgip', 'mig -lgi'])
    expect(probe.smiCalls).toBe(3)
    const [gpu] = probe.gpus
    expect(gpu.migMode).toEqual({current: 'enabled', pending: 'disabled'})
    expect(gpu.migProfiles?.map((profile) => profile.name)).toEqual(['1g.18gb', '1g.18gb+me', '2g.35gb', '7g.141gb'])
    expect(gpu.gpuInstances).toEqual([])
    expect(gpu.unavailable).toEqual([])
  })

  describe('with a MIG hint (-L showed MIG devices on GPU 0)', () => {
    const h200 = fixture('h200-sxm-141gb__nvidia-smi-a.txt')
    const uuid = /GPU UUID\s+: (\S+)/.exec(h200)![1]
    const migAnswers = {
      'mig -lgip -i 0': {stdout: fixture('h200-sxm-141gb__mig-lgip-wide-81col-excerpt-from-unit-test.txt')},
      'mig -lgi -i 0': {stdout: fixture('a30__mig-lgi-no-gpu-instances-found.txt'), exitCode: 6},
    }

    /** -q answers only once both MIG reads were asked for: the three run at the same time, not one after another */
    class GatedExecutor extends FixtureExecutor {
      private release: () => void = () => undefined
      private readonly gate = new Promise<void>((resolve) => (this.release = resolve))
      async run(argv: readonly string[]): Promise<ExecResult> {
        const answer = super.run(argv)
        if (this.seen.filter((key) => key.startsWith('mig')).length === 2) this.release()
        if (argv.includes('-q')) await this.gate
        return answer
      }
    }

    test('reads the MIG tables while -q runs, and uses them when -q confirms MIG', async () => {
      const executor = new GatedExecutor({[`-q -i ${uuid}`]: {stdout: withMigEnabled(h200, [0])}, ...migAnswers})
      const probe = await probeHost(smiFor(executor), {only: uuid, index: 0, migExpected: true})
      expect([...executor.seen].sort()).toEqual([`-q -i ${uuid}`, 'mig -lgi -i 0', 'mig -lgip -i 0'])
      expect(probe.gpus[0].migProfiles?.map((p) => p.name)).toEqual(['1g.18gb', '1g.18gb+me', '2g.35gb', '7g.141gb'])
      expect(probe.gpus[0].gpuInstances).toEqual([])
    })

    test('drops them, failures included, when -q says MIG is off after all', async () => {
      const executor = new FixtureExecutor({
        [`-q -i ${uuid}`]: {stdout: h200},
        'mig -lgip -i 0': {stdout: '', stderr: 'No MIG-enabled devices found.', exitCode: 6},
        'mig -lgi -i 0': {stdout: '', stderr: 'No MIG-enabled devices found.', exitCode: 6},
      })
      const probe = await probeHost(smiFor(executor), {only: uuid, index: 0, migExpected: true})
      expect(probe.gpus[0].migMode?.current).toBe('disabled')
      expect(probe.gpus[0].migProfiles).toBeNull()
    })
  })

  describe('one GPU by UUID: -q -i prints one block, whose position is not the index', () => {
    const h100 = fixture('h100-sxm-80gb-x8__nvidia-smi-a.txt')
    // GPU 3's block alone, as `nvidia-smi -q -i <its UUID>` prints it
    const blocks = h100.split(/\n(?=GPU [0-9A-F]{8}:)/)
    const gpu3 = `${blocks[0]}\n${blocks[4]}\n`
    const uuid3 = /GPU UUID\s+: (\S+)/.exec(blocks[4])![1]

    test('the index comes from the caller, and the MIG reads and listings are of that GPU', async () => {
      const executor = new FixtureExecutor({
        [`-q -i ${uuid3}`]: {stdout: withMigEnabled(gpu3, [0])},
        'mig -lgip -i 3': {stdout: lgipFor([3])},
        'mig -lgi -i 3': {stdout: fixture('a30__mig-lgi-no-gpu-instances-found.txt'), exitCode: 6},
      })
      const [gpu] = (await probeHost(smiFor(executor), {only: uuid3, index: 3})).gpus
      expect([gpu.index, gpu.uuid]).toEqual([3, uuid3])
      expect(gpu.migProfiles?.length).toBeGreaterThan(0)
      expect(new Set(gpu.migProfiles?.map((p) => p.gpuIndex))).toEqual(new Set([3]))
    })

    test('without the index it refuses, rather than take the block position (0) for it', async () => {
      const executor = new FixtureExecutor({[`-q -i ${uuid3}`]: {stdout: gpu3}})
      await expect(probeHost(smiFor(executor), {only: uuid3})).rejects.toThrow(/index of GPU .* must be given/)
    })
  })

  test('eight GPUs, MIG on two of them: still three calls, listings split by GPU index', async () => {
    const executor = new FixtureExecutor({
      '-q': {stdout: withMigEnabled(fixture('h100-sxm-80gb-x8__nvidia-smi-a.txt'), [0, 3])},
      'mig -lgip': {stdout: lgipFor([0, 3])},
      'mig -lgi': {stdout: fixture('h100-sxm-80gb__mig-lgi-7x1g10gb.txt')},
    })
    const probe = await probeHost(smiFor(executor))
    expect(executor.seen).toEqual(['-q', 'mig -lgip', 'mig -lgi'])
    expect(probe.smiCalls).toBe(3)
    expect(probe.gpus.map((gpu) => gpu.migMode?.current)).toEqual([
      'enabled',
      'disabled',
      'disabled',
      'enabled',
      'disabled',
      'disabled',
      'disabled',
      'disabled',
    ])
    expect(probe.gpus[0].migProfiles).toHaveLength(7)
    expect(probe.gpus[3].migProfiles?.find((profile) => profile.name === '3g.40gb')).toEqual({
      gpuIndex: 3,
      name: '3g.40gb',
      id: 9,
      free: 2,
      total: 2,
      memoryGiB: 39.5,
      smCount: 60,
    })
    expect(probe.gpus[1].migProfiles).toBeNull()
    expect(probe.gpus[0].gpuInstances.map((instance) => instance.id)).toEqual([7, 8, 9, 10, 11, 12, 13])
    expect(probe.gpus[3].gpuInstances).toEqual([])
  })

  test('a refused MIG listing degrades to unavailable on the MIG GPUs only', async () => {
    const executor = new FixtureExecutor({
      '-q': {stdout: withMigEnabled(fixture('h100-sxm-80gb-x8__nvidia-smi-a.txt'), [0])},
      'mig -lgip': {stdout: lgipFor([0])},
      'mig -lgi': {stdout: 'Unable to list GPU instances: Insufficient Permissions\n', exitCode: 4},
    })
    const probe = await probeHost(smiFor(executor))
    expect(probe.smiCalls).toBe(3)
    expect(probe.gpus[0].gpuInstances).toEqual([])
    expect(probe.gpus[0].unavailable).toEqual(['gpuInstances'])
    expect(probe.gpus[1].unavailable).toEqual([])
  })

  test('garbage from -q is SMI_UNPARSEABLE naming the command', async () => {
    const probe = probeHost(smiFor(new FixtureExecutor({'-q': {stdout: '<html>proxy error</html>\n'}})))
    await expect(probe).rejects.toMatchObject({code: 'SMI_UNPARSEABLE', exit: 3})
    await expect(probe).rejects.toThrow(/nvidia-smi -q/)
  })

  test('garbage from -lgip is SMI_UNPARSEABLE rather than "no profiles"', async () => {
    const executor = new FixtureExecutor({
      '-q': {stdout: withMigEnabled(fixture('h200-sxm-141gb__nvidia-smi-a.txt'), [0])},
      'mig -lgip': {stdout: 'Profile list moved to --format=json\n'},
      'mig -lgi': {stdout: ''},
    })
    await expect(probeHost(smiFor(executor))).rejects.toMatchObject({code: 'SMI_UNPARSEABLE', message: expect.stringContaining('nvidia-smi mig -lgip')})
  })

  test.each([
    {what: 'cut before the UUID of its only GPU', cut: (text: string) => text.slice(0, text.indexOf('    GPU UUID'))},
    {what: 'cut in the middle of the UUID', cut: (text: string) => text.slice(0, text.indexOf('GPU-cb3dfa52') + 'GPU-cb3dfa52-e2f3'.length)},
    {what: 'a UUID printed as N/A', cut: (text: string) => text.replace(/(GPU UUID\s+: ).*/, '$1N/A')},
  ])('a -q $what is refused as SMI_INCOMPLETE: nothing may be keyed by an empty UUID', async ({cut}) => {
    const text = cut(fixture('h200-sxm-141gb__nvidia-smi-a.txt'))
    const error = await probeHost(smiFor(new FixtureExecutor({'-q': {stdout: text}}))).catch((caught: unknown) => caught)
    expect(isCosplayError(error) && [error.code, error.exit]).toEqual(['SMI_INCOMPLETE', 3])
  })

  test('an 8-GPU -q cut inside its fourth GPU block is refused, naming that GPU', async () => {
    const full = fixture('h100-sxm-80gb-x8__nvidia-smi-a.txt')
    const blocks = [...full.matchAll(/^GPU [0-9A-F]{8}:/gm)].map((m) => m.index!)
    const text = full.slice(0, blocks[3] + 200)
    const error = await probeHost(smiFor(new FixtureExecutor({'-q': {stdout: text}}))).catch((caught: unknown) => caught)
    expect(isCosplayError(error) && [error.code, error.exit]).toEqual(['SMI_INCOMPLETE', 3])
    expect((error as Error).message).toContain('GPU 3')
  })

  test.each([
    {what: 'No devices were found (non-zero exit)', answer: {stdout: fixture('t4__nvidia-smi-i-1-no-devices-found.txt'), exitCode: 6}},
    {what: 'Attached GPUs : 0', answer: {stdout: '==============NVSMI LOG==============\n\nDriver Version : 550.90.12\nAttached GPUs : 0\n'}},
  ])('no GPU ($what) is NO_GPU', async ({answer}) => {
    const error = await probeHost(smiFor(new FixtureExecutor({'-q': answer}))).catch((caught: unknown) => caught)
    expect(isCosplayError(error) && [error.code, error.exit]).toEqual(['NO_GPU', 3])
  })
})

describe('listGpuInstances (what undo and restore look for)', () => {
  test('a changed format is SMI_UNPARSEABLE, never "no instances" (which could let MIG mode be turned off)', async () => {
    const executor = new FixtureExecutor({'mig -lgi -i 0': {stdout: 'Instance list moved to --format=json\n'}})
    await expect(listGpuInstances(smiFor(executor), 0)).rejects.toMatchObject({code: 'SMI_UNPARSEABLE'})
  })

  test('"No GPU instances found" (a non-zero exit) and MIG off are no instances', async () => {
    for (const stdout of [fixture('a30__mig-lgi-no-gpu-instances-found.txt'), 'No MIG-enabled devices found.\n']) {
      const executor = new FixtureExecutor({'mig -lgi -i 0': {stdout, exitCode: 6}})
      expect(await listGpuInstances(smiFor(executor), 0)).toEqual([])
    }
  })

  test('a refusal is an error here, not a degraded "unknown"', async () => {
    const executor = new FixtureExecutor({'mig -lgi -i 0': {stdout: '', stderr: 'Insufficient Permissions\n', exitCode: 4}})
    await expect(listGpuInstances(smiFor(executor), 0)).rejects.toMatchObject({code: 'SMI_PERMISSION'})
  })
})

describe('listComputeInstances (what undo destroys before its GPU instance)', () => {
  const lci = 'mig -i 0 -gi 3 -lci'

  test('garbage is SMI_UNPARSEABLE, never "no compute instances"', async () => {
    const executor = new FixtureExecutor({[lci]: {stdout: '\u001b[?25l%%%% NVML ????? <binary>\n'}})
    await expect(listComputeInstances(smiFor(executor), 0, 3)).rejects.toMatchObject({code: 'SMI_UNPARSEABLE', exit: 3})
  })

  test('a table is read; "No compute instances found" and a GPU instance gone are none', async () => {
    const table = new FixtureExecutor({[lci]: {stdout: fixture('h100-sxm-80gb__mig-lci-2ci.txt')}})
    expect((await listComputeInstances(smiFor(table), 0, 3)).map((ci) => [ci.gpuInstanceId, ci.id])).toEqual([
      [3, 0],
      [2, 0],
    ])
    for (const stdout of ['No compute instances found: Not Found\n', fixture('gh200-96gb__mig-dci-no-gpu-instances-found.txt')]) {
      expect(await listComputeInstances(smiFor(new FixtureExecutor({[lci]: {stdout, exitCode: 6}})), 0, 3)).toEqual([])
    }
  })
})

describe('SmiGpuControl.migDevices', () => {
  test('a default table printed as garbage is SMI_UNPARSEABLE, not MIG devices of unknown GI', async () => {
    const executor = new FixtureExecutor({'-L': {stdout: fixture('h100-pcie-80gb__L-mig.txt')}, '': {stdout: 'NVSMI LOG ???? <binary>\n'}})
    await expect(new SmiGpuControl(smiFor(executor)).migDevices()).rejects.toMatchObject({
      code: 'SMI_UNPARSEABLE',
      message: expect.stringMatching(/^nvidia-smi printed/),
    })
  })
})
