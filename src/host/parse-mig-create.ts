export type CreatedGpuInstance = {
  readonly kind: 'gpu-instance'
  readonly gpuIndex: number
  readonly gpuInstanceId: number
  readonly profileName: string
  readonly profileId: number
}

export type CreatedComputeInstance = {
  readonly kind: 'compute-instance'
  readonly gpuIndex: number
  readonly gpuInstanceId: number
  /** null on old drivers, whose success line does not name the new CI */
  readonly computeInstanceId: number | null
  readonly profileName: string
  readonly profileId: number
}

export type MigCreated = CreatedGpuInstance | CreatedComputeInstance

// Numbers are right-aligned to two characters ("ID  2 on GPU  0"), hence \s+ everywhere.
const GPU_INSTANCE = /^Successfully created GPU instance ID\s+(\d+)\s+on GPU\s+(\d+)\s+using profile MIG\s+(\S+)\s+\(ID\s+(\d+)\)/
const COMPUTE_INSTANCE =
  /^Successfully created compute instance(?: ID\s+(\d+))?\s+on GPU\s+(\d+)\s+GPU instance ID\s+(\d+)\s+using profile MIG\s+(\S+)\s+\(ID\s+(\d+)\)/

/**
 * Reads the success lines of `mig -cgi ... [-C]` and `mig -cci`, in output order. Other lines are skipped, so a
 * call that failed half-way (its stdout is on SmiError.stdout) still reports what it made.
 */
export function parseMigCreate(text: string): MigCreated[] {
  const created: MigCreated[] = []
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    const gi = GPU_INSTANCE.exec(line)
    if (gi !== null) {
      created.push({
        kind: 'gpu-instance',
        gpuIndex: Number(gi[2]),
        gpuInstanceId: Number(gi[1]),
        profileName: gi[3],
        profileId: Number(gi[4]),
      })
      continue
    }
    const ci = COMPUTE_INSTANCE.exec(line)
    if (ci !== null) {
      created.push({
        kind: 'compute-instance',
        gpuIndex: Number(ci[2]),
        gpuInstanceId: Number(ci[3]),
        computeInstanceId: ci[1] === undefined ? null : Number(ci[1]),
        profileName: ci[4],
        profileId: Number(ci[5]),
      })
    }
  }
  return created
}
