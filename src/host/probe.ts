import {HostError} from '../core/errors.js'
import {quoteOutput} from '../core/quote-output.js'
import {parseMigLci} from './parse-mig-lci.js'
import {parseMigLgi} from './parse-mig-lgi.js'
import {parseMigLgip} from './parse-mig-lgip.js'
import {parseSmiQuery, type SmiQueryGpu} from './parse-smi-query.js'
import type {Smi} from './smi.js'
import {isSmiError, smiUnparseable} from './smi-error.js'
import type {ComputeInstance, GpuInstance, HostGpu, HostProbe, MigProfile} from './types.js'

const QUERY_ARGS = ['-q']
const LGIP_ARGS = ['mig', '-lgip']
const LGI_ARGS = ['mig', '-lgi']

// Codes after which a MIG listing is left out (null + unavailable) instead of failing the whole probe.
const DEGRADABLE = new Set(['SMI_PERMISSION', 'SMI_NOT_SUPPORTED'])

/**
 * Reads the host's GPUs with a fixed number of nvidia-smi calls, whatever the GPU count: `-q` always, and
 * `mig -lgip` plus `mig -lgi` (which cover every GPU at once) only when some GPU has MIG enabled now.
 * With `only` (an index or UUID) every call reads that one GPU: on an 8-GPU box a full `-q` takes
 * several hundred ms, and the journal runner (apply/) makes its reads while it holds the GPU's lock.
 */
export type ProbeOptions = {
  readonly only?: string | number
  /** false: `-q` alone; MIG profiles and instances are listed as unavailable (for callers that list what they need themselves) */
  readonly mig?: boolean
  /**
   * With `only`: a listing already showed MIG devices on this GPU. Its MIG tables are then read alongside `-q`
   * instead of after it (two calls' latency saved while the lock is held); should `-q` say MIG is off after all,
   * those reads are dropped.
   */
  readonly migExpected?: boolean
  /**
   * With `only` a UUID: that GPU's index, which the caller knows from `-L`. `-q -i` prints one block, whose position
   * says nothing of the index, and every change and MIG read that follows goes to `-i <index>`.
   */
  readonly index?: number
}

export async function probeHost(smi: Smi, options: ProbeOptions = {}): Promise<HostProbe> {
  const callsBefore = smi.callCount
  const only = options.only === undefined ? [] : ['-i', String(options.only)]
  const index = typeof options.only === 'number' ? options.only : options.index
  if (only.length > 0 && index === undefined) throw new Error(`probeHost: the index of GPU ${options.only} must be given`)
  // `mig -i` is given the index, which every driver's mig subcommand accepts
  const migOnly = index === undefined ? [] : ['-i', String(index)]
  const early = options.migExpected && options.mig !== false && index !== undefined ? migTables(smi, migOnly) : null
  early?.catch(() => undefined) // used only when -q confirms MIG; a failure then surfaces below
  const queryText = await smi.read([...QUERY_ARGS, ...only])
  const query = parseSmiQuery(queryText)
  if (query.gpus.length === 0) {
    if (query.attachedGpus === 0 || /No devices were found/i.test(queryText)) {
      throw new HostError('NO_GPU', 'nvidia-smi -q lists no GPU on this host', {
        fix: ['check that the NVIDIA driver sees the GPU: nvidia-smi -L'],
      })
    }
    throw smiUnparseable('nvidia-smi -q', queryText)
  }
  // one block when `only` is given: the GPU asked for, at its index; else every GPU, at its position
  const gpus = query.gpus
    .map(keyed)
    .map((gpu) => (index === undefined ? gpu : {...gpu, index, processes: gpu.processes?.map((process) => ({...process, gpuIndex: index})) ?? null}))

  const anyMig = gpus.some((gpu) => gpu.migMode?.current === 'enabled')
  let profiles: MigProfile[] | null = null
  let instances: GpuInstance[] | null = null
  const degraded: string[] = []
  if (anyMig && options.mig === false) {
    degraded.push('migProfiles', 'gpuInstances')
  } else if (anyMig) {
    ;({profiles, instances} = await (early ?? migTables(smi, migOnly)))
    if (profiles === null) degraded.push('migProfiles')
    if (instances === null) degraded.push('gpuInstances')
  }

  return {
    driverVersion: query.driverVersion,
    cudaVersion: query.cudaVersion,
    gpus: gpus.map((gpu) => hostGpuFrom(gpu, profiles, instances, degraded)),
    smiCalls: smi.callCount - callsBefore,
  }
}

// A full GPU UUID. A -q cut off mid-line leaves a prefix of one, which must not pass as a key either.
type KeyedGpu = SmiQueryGpu & {readonly uuid: string}

const GPU_UUID = /^GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Journals, leases and locks are keyed by the GPU's UUID (and its index, which is the block's position and so
 * always there): a GPU block without a whole UUID is refused here, before anything can be recorded under an
 * empty or partial key.
 */
function keyed(gpu: SmiQueryGpu): KeyedGpu {
  if (gpu.uuid !== null && GPU_UUID.test(gpu.uuid)) return {...gpu, uuid: gpu.uuid}
  const what = gpu.uuid === null ? 'without its GPU UUID' : `with an incomplete GPU UUID ${quoteOutput(gpu.uuid)}`
  throw new HostError('SMI_INCOMPLETE', `nvidia-smi -q printed GPU ${gpu.index} (bus ${gpu.busId}) ${what}; its output looks cut off`, {
    fix: ['run nvidia-smi -q by hand and check that it completes; a driver or GPU in trouble may need an administrator'],
  })
}

function hostGpuFrom(gpu: KeyedGpu, profiles: readonly MigProfile[] | null, instances: readonly GpuInstance[] | null, degraded: readonly string[]): HostGpu {
  const isMigOn = gpu.migMode?.current === 'enabled'
  return {
    index: gpu.index,
    // Full -q always prints the name; an empty one (listed as unavailable) is only shown, never used as a key.
    name: gpu.name ?? '',
    uuid: gpu.uuid,
    busId: gpu.busId,
    persistenceMode: gpu.persistenceMode,
    migMode: gpu.migMode,
    power: gpu.power,
    clocks: gpu.clocks,
    memoryTotalMiB: gpu.memoryTotalMiB,
    migProfiles: isMigOn && profiles !== null ? profiles.filter((profile) => profile.gpuIndex === gpu.index) : null,
    gpuInstances: isMigOn && instances !== null ? instances.filter((instance) => instance.gpuIndex === gpu.index) : [],
    processes: gpu.processes,
    unavailable: isMigOn ? [...gpu.unavailable, ...degraded] : gpu.unavailable,
  }
}

/** `mig -lgip` and `mig -lgi`: independent reads, made at the same time */
async function migTables(smi: Smi, migOnly: readonly string[]): Promise<{profiles: MigProfile[] | null; instances: GpuInstance[] | null}> {
  const [profiles, instances] = await Promise.all([
    listing(smi, [...LGIP_ARGS, ...migOnly], parseMigLgip, /No MIG-enabled devices found/i, /GPU instance profiles:/),
    listing(smi, [...LGI_ARGS, ...migOnly], parseMigLgi, /No GPU instances found/i, /GPU instances:/),
  ])
  return {profiles, instances}
}

/**
 * One GPU's instances (`mig -lgi -i N`) for the steps that look for what they made: none when MIG is off, and
 * output that is neither a table nor a "none" message is an error, never "no instances".
 */
export async function listGpuInstances(smi: Smi, gpuIndex: number): Promise<GpuInstance[]> {
  const none = /No GPU instances found|No MIG-enabled devices found|not in MIG mode/i
  return (await listing(smi, [...LGI_ARGS, '-i', String(gpuIndex)], parseMigLgi, none, /GPU instances:/, {degrade: false})) ?? []
}

/**
 * One GPU instance's compute instances (`mig -lci`): none when it has none, or is gone; output that is neither a
 * table nor such a message is an error, never "no compute instances" (undo would then leave them behind).
 */
export async function listComputeInstances(smi: Smi, gpuIndex: number, gpuInstanceId: number): Promise<ComputeInstance[]> {
  const args = ['mig', '-i', String(gpuIndex), '-gi', String(gpuInstanceId), '-lci']
  const none = /No (GPU|compute) instances? found|\bNot Found\b/i
  return (await listing(smi, args, parseMigLci, none, /Compute instances:/, {degrade: false})) ?? []
}

/**
 * Runs one MIG listing. Its "nothing here" message counts as an empty list even though nvidia-smi exits
 * non-zero with it; a refusal the probe can live without yields null (unless degrade is false); text that is
 * neither a table nor that message is an error, so a changed format never reads as "no instances".
 */
async function listing<T>(
  smi: Smi,
  args: readonly string[],
  parse: (text: string) => T[],
  empty: RegExp,
  header: RegExp,
  options: {readonly degrade: boolean} = {degrade: true},
): Promise<T[] | null> {
  let text: string
  try {
    text = await smi.read(args)
  } catch (error) {
    if (isSmiError(error) && error.line !== null && empty.test(error.line)) return parse(error.stdout)
    if (options.degrade && isSmiError(error) && DEGRADABLE.has(error.code)) return null
    throw error
  }
  const rows = parse(text)
  if (rows.length === 0 && !empty.test(text) && !header.test(text)) throw smiUnparseable(`nvidia-smi ${args.join(' ')}`, text)
  return rows
}
