import type {MigProfile} from './types.js'

// First line of a two-line row: GPU, "MIG <name>", ID, Free/Total, GiB, P2P, SM, DEC, ENC. The second line
// (CE, JPEG, OFA) carries nothing the planner uses. A long name ("2g.48gb+me.all") can fill its column, so the
// gap before the ID may be a single space; the lazy name still stops there because "free/total" must follow.
const ROW = /^\|\s*(\d+)\s+MIG\s+(\S+?)\s*(\d+)\s+(\d+)\/(\d+)\s+(\d+(?:\.\d+)?)\s+\S+\s+(\d+)\s+\d+\s+\d+\s*\|$/

/**
 * Parses `nvidia-smi mig -lgip` (79-column tables of older drivers, 81 of newer ones) row by row, so excerpts
 * and multi-GPU listings parse the same way. "No MIG-enabled devices found." yields [].
 */
export function parseMigLgip(text: string): MigProfile[] {
  const profiles: MigProfile[] = []
  for (const line of text.split(/\r?\n/)) {
    const match = ROW.exec(line.trimEnd())
    if (match === null) continue
    profiles.push({
      gpuIndex: Number(match[1]),
      name: match[2],
      id: Number(match[3]),
      free: Number(match[4]),
      total: Number(match[5]),
      memoryGiB: Number(match[6]),
      smCount: Number(match[7]),
    })
  }
  return profiles
}
