export type MigDestroyed =
  | {readonly kind: 'gpu-instance'; readonly gpuIndex: number; readonly gpuInstanceId: number}
  | {readonly kind: 'compute-instance'; readonly gpuIndex: number; readonly gpuInstanceId: number; readonly computeInstanceId: number}

const COMPUTE_INSTANCE = /^Successfully destroyed compute instance ID\s+(\d+)\s+from GPU\s+(\d+)\s+GPU instance ID\s+(\d+)/
const GPU_INSTANCE = /^Successfully destroyed GPU instance ID\s+(\d+)\s+from GPU\s+(\d+)/

/** Reads the success lines of `mig -dci` and `mig -dgi`, in output order; other lines are skipped. */
export function parseMigDestroy(text: string): MigDestroyed[] {
  const destroyed: MigDestroyed[] = []
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim()
    const ci = COMPUTE_INSTANCE.exec(line)
    if (ci !== null) {
      destroyed.push({kind: 'compute-instance', gpuIndex: Number(ci[2]), gpuInstanceId: Number(ci[3]), computeInstanceId: Number(ci[1])})
      continue
    }
    const gi = GPU_INSTANCE.exec(line)
    if (gi !== null) destroyed.push({kind: 'gpu-instance', gpuIndex: Number(gi[2]), gpuInstanceId: Number(gi[1])})
  }
  return destroyed
}
