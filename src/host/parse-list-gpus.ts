import {smiUnparseable} from './smi-error.js'

export type ListedGpu = {readonly index: number; readonly name: string; readonly uuid: string}

/** A MIG device line of `nvidia-smi -L`. deviceIndex is the "Device N" number, which is not the GI ID. */
export type ListedMigDevice = {
  readonly gpuIndex: number
  readonly deviceIndex: number
  readonly profileName: string
  readonly uuid: string
}

export type ListGpus = {readonly gpus: readonly ListedGpu[]; readonly migDevices: readonly ListedMigDevice[]}

const GPU_LINE = /^\s*GPU (\d+): (.+?) \(UUID: (GPU-[0-9A-Fa-f-]+)\)\s*$/
// R450 printed "MIG 3g.20gb Device 0:"; later drivers pad the name and the device number ("Device  0:").
const MIG_LINE = /^\s*MIG (\S+)\s+Device\s+(\d+):\s*\(UUID: (MIG-[^)\s]+)\)\s*$/

// how a GPU or MIG line starts: one that does not parse whole (cut off, or a format this version does not know)
const ENTRY = /^\s*(GPU \d+:|MIG )/

/**
 * Parses `nvidia-smi -L`. MIG lines belong to the GPU line above them; leading indentation is not relied on.
 * Output that lists no GPU (nvidia-smi fails when there is none), or with an entry that does not parse, is
 * SMI_UNPARSEABLE: never an empty or partial list, which would read as "no such GPU on this host".
 */
export function parseListGpus(text: string): ListGpus {
  const gpus: ListedGpu[] = []
  const migDevices: ListedMigDevice[] = []
  for (const line of text.split(/\r?\n/)) {
    const gpu = GPU_LINE.exec(line)
    if (gpu !== null) {
      gpus.push({index: Number(gpu[1]), name: gpu[2], uuid: gpu[3]})
      continue
    }
    const mig = MIG_LINE.exec(line)
    if (mig !== null && gpus.length > 0) {
      migDevices.push({
        gpuIndex: gpus[gpus.length - 1].index,
        deviceIndex: Number(mig[2]),
        profileName: mig[1],
        uuid: mig[3],
      })
      continue
    }
    if (ENTRY.test(line)) throw smiUnparseable('nvidia-smi -L', text)
  }
  if (gpus.length === 0) throw smiUnparseable('nvidia-smi -L', text)
  return {gpus, migDevices}
}
