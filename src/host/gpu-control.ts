import {HostError} from '../core/errors.js'
import {joinMigDevices} from './join-mig-devices.js'
import {type ListGpus, parseListGpus} from './parse-list-gpus.js'
import {parseMigCreate} from './parse-mig-create.js'
import {parseSmiTable} from './parse-smi-table.js'
import {listComputeInstances, listGpuInstances, type ProbeOptions, probeHost} from './probe.js'
import type {Smi} from './smi.js'
import {isSmiError, smiUnparseable} from './smi-error.js'
import type {ComputeInstance, GpuInstance, HostGpu, HostProbe, MigDevice} from './types.js'

/**
 * The GPU as the journal runner (apply/) sees it: reads, and typed mutations that either succeed or throw.
 * Instances are created and destroyed by their own IDs only; nothing here can touch all instances at once.
 */
export type GpuProbeOptions = Pick<ProbeOptions, 'mig' | 'migExpected' | 'index'>

export interface GpuControl {
  /** every GPU, fully: the costly read, for a first look or a report */
  probe(): Promise<HostProbe>
  /**
   * One GPU, fully unless {mig: false}: by index, or by UUID with its index when the caller knows it (else `-L` is
   * read to learn it). GPU_GONE when nvidia-smi no longer lists it. migExpected: see ProbeOptions.
   */
  probeGpu(id: string | number, options?: GpuProbeOptions): Promise<HostGpu>
  /** GPUs and MIG devices with their UUIDs (`-L`): cheap, but MIG devices are named by device index, not GI/CI */
  listGpus(gpuIndex?: number): Promise<ListGpus>
  /** the GPU instances on one GPU now (`mig -lgi -i N`) */
  gpuInstances(gpuIndex: number): Promise<GpuInstance[]>
  migDevices(): Promise<MigDevice[]>
  computeInstances(gpuIndex: number, gpuInstanceId: number): Promise<ComputeInstance[]>
  /** what the change's own output says of the mode now; 'unknown' when it says neither (read the GPU then) */
  setMigMode(gpuIndex: number, enabled: boolean): Promise<MigModeChange>
  /** `-cgi P -C`: the GPU instance and its default compute instance in one call (ID null: an old driver did not print it) */
  createGpuInstanceWithComputeInstance(gpuIndex: number, profileId: number): Promise<{gpuInstanceId: number; computeInstanceId: number | null}>
  destroyComputeInstance(gpuIndex: number, gpuInstanceId: number, computeInstanceId: number): Promise<void>
  destroyGpuInstance(gpuIndex: number, gpuInstanceId: number): Promise<void>
  lockClocks(gpuIndex: number, clockMHz: number): Promise<void>
  resetClocks(gpuIndex: number): Promise<void>
  setPowerLimit(gpuIndex: number, powerLimitW: number): Promise<void>
  setPersistence(gpuIndex: number, enabled: boolean): Promise<void>
}

export type MigModeChange = 'enabled' | 'disabled' | 'pending' | 'unknown'

/** GpuControl over nvidia-smi: every call goes through the Smi funnel. */
export class SmiGpuControl implements GpuControl {
  /** `-L` once per command: a GPU's index does not change while one runs (recover, down across GPUs ask per book) */
  private listing: Promise<ListGpus> | null = null

  constructor(private readonly smi: Smi) {}

  probe(): Promise<HostProbe> {
    return probeHost(this.smi)
  }

  async probeGpu(id: string | number, options: GpuProbeOptions = {}): Promise<HostGpu> {
    try {
      const index = typeof id === 'number' ? id : (options.index ?? (await this.indexOf(id)))
      const probe = await probeHost(this.smi, {...options, only: id, index})
      return {...probe.gpus[0], driverVersion: probe.driverVersion}
    } catch (error) {
      if (isSmiError(error, 'NO_GPU') || (error instanceof HostError && error.code === 'NO_GPU')) {
        throw new HostError('GPU_GONE', `GPU ${id} is no longer listed by nvidia-smi`, {
          cause: error,
          fix: ['check the driver sees it: nvidia-smi -L', 'after a GPU was removed, gpu-cosplay reset --host-gpu N --yes clears its records'],
        })
      }
      throw error
    }
  }

  /** A GPU's index, from `-L`: `-q -i UUID` does not print it. */
  private async indexOf(uuid: string): Promise<number> {
    this.listing ??= this.listGpus()
    const listed = (await this.listing).gpus.find((gpu) => gpu.uuid === uuid)
    if (!listed) throw new HostError('NO_GPU', `${uuid} is not listed by nvidia-smi -L`)
    return listed.index
  }

  async listGpus(gpuIndex?: number): Promise<ListGpus> {
    return parseListGpus(await this.smi.read(gpuIndex === undefined ? ['-L'] : ['-L', '-i', String(gpuIndex)]))
  }

  gpuInstances(gpuIndex: number): Promise<GpuInstance[]> {
    return listGpuInstances(this.smi, gpuIndex)
  }

  /** `-L` lists MIG devices by device index, not GI ID; the default table maps the index to GI/CI. */
  async migDevices(): Promise<MigDevice[]> {
    const listed = parseListGpus(await this.smi.read(['-L']))
    const text = await this.smi.read([])
    const table = parseSmiTable(text)
    // the table always has a row per GPU (none: nvidia-smi fails with "No devices were found"); without one, every
    // MIG device would look unknown to it
    if (table.gpus.length === 0) throw smiUnparseable('nvidia-smi', text)
    return joinMigDevices(listed, table)
  }

  computeInstances(gpuIndex: number, gpuInstanceId: number): Promise<ComputeInstance[]> {
    return listComputeInstances(this.smi, gpuIndex, gpuInstanceId)
  }

  async setMigMode(gpuIndex: number, enabled: boolean): Promise<MigModeChange> {
    return migModeChange(await this.smi.mutate(['-i', String(gpuIndex), '-mig', enabled ? '1' : '0']))
  }

  async createGpuInstanceWithComputeInstance(gpuIndex: number, profileId: number): Promise<{gpuInstanceId: number; computeInstanceId: number | null}> {
    const args = ['mig', '-i', String(gpuIndex), '-cgi', String(profileId), '-C']
    const out = await this.smi.mutate(args)
    const created = parseMigCreate(out)
    const gi = created.find((c) => c.kind === 'gpu-instance')
    const ci = created.find((c) => c.kind === 'compute-instance')
    if (!gi || !ci || ci.kind !== 'compute-instance') throw smiUnparseable(`nvidia-smi ${args.join(' ')}`, out)
    return {gpuInstanceId: gi.gpuInstanceId, computeInstanceId: ci.computeInstanceId}
  }

  async destroyComputeInstance(gpuIndex: number, gpuInstanceId: number, computeInstanceId: number): Promise<void> {
    await this.smi.mutate(['mig', '-i', String(gpuIndex), '-gi', String(gpuInstanceId), '-ci', String(computeInstanceId), '-dci'])
  }

  async destroyGpuInstance(gpuIndex: number, gpuInstanceId: number): Promise<void> {
    await this.smi.mutate(['mig', '-i', String(gpuIndex), '-gi', String(gpuInstanceId), '-dgi'])
  }

  async lockClocks(gpuIndex: number, clockMHz: number): Promise<void> {
    await this.smi.mutate(['-i', String(gpuIndex), '-lgc', `${clockMHz},${clockMHz}`])
  }

  async resetClocks(gpuIndex: number): Promise<void> {
    await this.smi.mutate(['-i', String(gpuIndex), '-rgc'])
  }

  async setPowerLimit(gpuIndex: number, powerLimitW: number): Promise<void> {
    await this.smi.mutate(['-i', String(gpuIndex), '-pl', String(powerLimitW)])
  }

  async setPersistence(gpuIndex: number, enabled: boolean): Promise<void> {
    await this.smi.mutate(['-i', String(gpuIndex), '-pm', enabled ? '1' : '0'])
  }
}

/**
 * `-mig 1|0` prints "Enabled MIG Mode for GPU <bus>" when it took effect and "Warning: MIG mode is in pending
 * enable state for GPU <bus>:..." when it waits for a reset (captures in test/fixtures/nvidia-smi). Anything else
 * is 'unknown', and the caller reads the GPU instead of guessing.
 */
export function migModeChange(out: string): MigModeChange {
  if (/MIG mode is in pending (enable|disable) state/i.test(out)) return 'pending'
  if (/^\s*Enabled MIG Mode for GPU/im.test(out)) return 'enabled'
  if (/^\s*Disabled MIG Mode for GPU/im.test(out)) return 'disabled'
  return 'unknown'
}
