import {HostError} from '../core/errors.js'
import {joinMigDevices} from './join-mig-devices.js'
import {parseListGpus} from './parse-list-gpus.js'
import {parseMigCreate} from './parse-mig-create.js'
import {parseMigLci} from './parse-mig-lci.js'
import {parseSmiTable} from './parse-smi-table.js'
import {probeHost} from './probe.js'
import type {Smi} from './smi.js'
import {isSmiError} from './smi-error.js'
import type {ComputeInstance, HostProbe, MigDevice} from './types.js'

/**
 * The GPU as the apply engine sees it: reads, and typed mutations that either succeed or throw.
 * Instances are created and destroyed by their own IDs only; nothing here can touch all instances at once.
 */
export interface GpuControl {
  probe(): Promise<HostProbe>
  migDevices(): Promise<MigDevice[]>
  computeInstances(gpuIndex: number, gpuInstanceId: number): Promise<ComputeInstance[]>
  setMigMode(gpuIndex: number, enabled: boolean): Promise<void>
  createGpuInstance(gpuIndex: number, profileId: number): Promise<{gpuInstanceId: number}>
  createComputeInstance(gpuIndex: number, gpuInstanceId: number): Promise<{computeInstanceId: number | null}>
  destroyComputeInstance(gpuIndex: number, gpuInstanceId: number, computeInstanceId: number): Promise<void>
  destroyGpuInstance(gpuIndex: number, gpuInstanceId: number): Promise<void>
  lockClocks(gpuIndex: number, clockMHz: number): Promise<void>
  resetClocks(gpuIndex: number): Promise<void>
  setPowerLimit(gpuIndex: number, powerLimitW: number): Promise<void>
  setPersistence(gpuIndex: number, enabled: boolean): Promise<void>
}

/** GpuControl over nvidia-smi: every call goes through the Smi funnel. */
export class SmiGpuControl implements GpuControl {
  constructor(private readonly smi: Smi) {}

  probe(): Promise<HostProbe> {
    return probeHost(this.smi)
  }

  /** `-L` lists MIG devices by device index, not GI ID; the default table maps the index to GI/CI. */
  async migDevices(): Promise<MigDevice[]> {
    const listed = parseListGpus(await this.smi.read(['-L']))
    const table = parseSmiTable(await this.smi.read([]))
    return joinMigDevices(listed, table)
  }

  async computeInstances(gpuIndex: number, gpuInstanceId: number): Promise<ComputeInstance[]> {
    try {
      return parseMigLci(await this.smi.read(['mig', '-i', String(gpuIndex), '-gi', String(gpuInstanceId), '-lci']))
    } catch (error) {
      if (isSmiError(error, 'SMI_NOT_FOUND_INSTANCE')) return []
      throw error
    }
  }

  async setMigMode(gpuIndex: number, enabled: boolean): Promise<void> {
    await this.smi.mutate(['-i', String(gpuIndex), '-mig', enabled ? '1' : '0'])
  }

  async createGpuInstance(gpuIndex: number, profileId: number): Promise<{gpuInstanceId: number}> {
    const out = await this.smi.mutate(['mig', '-i', String(gpuIndex), '-cgi', String(profileId)])
    const created = parseMigCreate(out).find((c) => c.kind === 'gpu-instance')
    if (!created) throw unreadable('mig -cgi', out)
    return {gpuInstanceId: created.gpuInstanceId}
  }

  async createComputeInstance(gpuIndex: number, gpuInstanceId: number): Promise<{computeInstanceId: number | null}> {
    const out = await this.smi.mutate(['mig', '-i', String(gpuIndex), '-gi', String(gpuInstanceId), '-cci'])
    const created = parseMigCreate(out).find((c) => c.kind === 'compute-instance')
    if (!created || created.kind !== 'compute-instance') throw unreadable('mig -cci', out)
    return {computeInstanceId: created.computeInstanceId}
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

function unreadable(command: string, out: string): HostError {
  const first = out.split('\n').find((l) => l.trim()) ?? '(no output)'
  return new HostError('SMI_UNPARSEABLE', `nvidia-smi ${command} succeeded but its output was not understood: ${first.trim()}`)
}
