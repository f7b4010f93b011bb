import type {ComputeInstance} from './types.js'

// GPU, GI ID, "MIG <name>", CI profile ID, CI ID, and on newer drivers placement start:size. The "Free/Total"
// of `-lcip` rows keeps them from matching, so a profile listing is never read as instances.
const ROW = /^\|\s*(\d+)\s+(\d+)\s+MIG\s+(\S+?)\s*(\d+)\s+(\d+)(?:\s+(\d+):(\d+))?\s*\|$/

/** Parses `nvidia-smi mig -lci`, the 57-column layout without placement (null) and the 70-column one with it. */
export function parseMigLci(text: string): ComputeInstance[] {
  const instances: ComputeInstance[] = []
  for (const line of text.split(/\r?\n/)) {
    const match = ROW.exec(line.trimEnd())
    if (match === null) continue
    instances.push({
      gpuIndex: Number(match[1]),
      gpuInstanceId: Number(match[2]),
      profileName: match[3],
      profileId: Number(match[4]),
      id: Number(match[5]),
      placementStart: match[6] === undefined ? null : Number(match[6]),
      placementSize: match[7] === undefined ? null : Number(match[7]),
    })
  }
  return instances
}
