import type {GpuInstance} from './types.js'

// GPU, "MIG <name>", profile ID, instance ID, placement start:size. The name column is 54/57/59 characters wide
// depending on the driver, so the row is read as tokens.
const ROW = /^\|\s*(\d+)\s+MIG\s+(\S+?)\s*(\d+)\s+(\d+)\s+(\d+):(\d+)\s*\|$/

/** Parses `nvidia-smi mig -lgi`. "No GPU instances found: Not Found" (printed with a non-zero exit) yields []. */
export function parseMigLgi(text: string): GpuInstance[] {
  const instances: GpuInstance[] = []
  for (const line of text.split(/\r?\n/)) {
    const match = ROW.exec(line.trimEnd())
    if (match === null) continue
    instances.push({
      gpuIndex: Number(match[1]),
      profileName: match[2],
      profileId: Number(match[3]),
      id: Number(match[4]),
      placementStart: Number(match[5]),
      placementSize: Number(match[6]),
    })
  }
  return instances
}
