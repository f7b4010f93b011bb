import type {GpuProcess, MigModeState} from './types.js'

/** One GPU of the default `nvidia-smi` table. */
export type SmiTableGpu = {
  readonly index: number
  /** as the table prints it: older drivers cut long names to "NVIDIA A100-SXM..." */
  readonly name: string
  readonly persistence: boolean | null
  readonly busId: string
  readonly powerCapW: number | null
  readonly memoryTotalMiB: number | null
  /** null when the table shows N/A (a GPU without MIG) or has no MIG M. row */
  readonly migMode: MigModeState | null
}

/** One row of the table's "MIG devices" section. */
export type SmiTableMigDevice = {
  readonly gpuIndex: number
  readonly gpuInstanceId: number
  readonly computeInstanceId: number
  /** the "MIG Dev" column: the same number as "Device N" in `nvidia-smi -L` */
  readonly deviceIndex: number
  /** memory of the GI; CIs that share one GI print it once, and each of them gets it here */
  readonly memoryTotalMiB: number | null
  readonly smCount: number | null
}

export type SmiTable = {
  readonly driverVersion: string | null
  readonly cudaVersion: string | null
  readonly gpus: readonly SmiTableGpu[]
  readonly migDevices: readonly SmiTableMigDevice[]
  readonly processes: readonly GpuProcess[]
}

type Section = 'gpus' | 'mig' | 'processes'

const VERSIONS = /NVIDIA-SMI\s+(\S+)\s+Driver Version:\s*(\S+)\s+CUDA Version:\s*(\S+)/
const BUS_ID = /([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])/
// GPU, GI, CI (absent before R470), PID, type (C, G, C+G, M, M+C), name (may hold spaces or a "..." cut), memory.
const PROCESS = /^\|\s*(\d+)\s+(?:(\d+|N\/A)\s+(\d+|N\/A)\s+)?(\d+)\s+([CGM](?:\+[CGM])*)\s+(.*?)\s+(?:(\d+)MiB|N\/A)\s*\|$/

/**
 * Parses the default `nvidia-smi` table (79, 89 or 91 columns) by its borders and cells, never by column
 * offsets. A row is the run of `|` lines between two `+` borders; its first line holds the identifying cells and
 * the lines below it (the MIG M. row, the BAR1 row) add to it.
 */
export function parseSmiTable(text: string): SmiTable {
  let driverVersion: string | null = null
  let cudaVersion: string | null = null
  const gpus: SmiTableGpu[] = []
  const migDevices: SmiTableMigDevice[] = []
  const processes: GpuProcess[] = []

  let section: Section = 'gpus'
  let inBody = false
  let row: string[] = []
  const flush = () => {
    if (row.length > 0) {
      if (section === 'gpus') pushGpu(row, gpus)
      else if (section === 'mig') pushMigDevice(row, migDevices)
      else for (const line of row) pushProcess(line, processes)
    }
    row = []
  }

  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trimEnd()
    const versions = VERSIONS.exec(line)
    if (versions !== null) {
      driverVersion = versions[2]
      cudaVersion = versions[3] === 'N/A' ? null : versions[3]
      continue
    }
    const trimmed = line.trim()
    if (/^\|\s*MIG devices:/.test(trimmed)) {
      flush()
      section = 'mig'
      inBody = false
    } else if (/^\|\s*Processes:/.test(trimmed)) {
      flush()
      section = 'processes'
      inBody = false
    } else if (/^\|\s*GPU\s+Name\b/.test(trimmed)) {
      flush()
      section = 'gpus'
      inBody = false
    } else if (trimmed.startsWith('|=')) {
      flush()
      inBody = true
    } else if (trimmed === '' || trimmed.startsWith('+')) {
      flush()
      // The spacer between sections is blank; inside a section only borders come between rows.
      if (trimmed === '') inBody = false
    } else if (inBody && trimmed.startsWith('|')) {
      row.push(trimmed)
    }
  }
  flush()
  return {driverVersion, cudaVersion, gpus, migDevices, processes}
}

function cellsOf(line: string | undefined): string[] {
  if (line === undefined) return []
  return line
    .replace(/^\|/, '')
    .replace(/\|$/, '')
    .split('|')
    .map((cell) => cell.trim())
}

function pushGpu(lines: readonly string[], gpus: SmiTableGpu[]): void {
  const [first, second, third] = [cellsOf(lines[0]), cellsOf(lines[1]), cellsOf(lines[2])]
  const head = /^(\d+)\s+(.*?)\s+(On|Off|N\/A)$/.exec(first[0] ?? '')
  const busId = BUS_ID.exec(first[1] ?? '')
  if (head === null || busId === null) return
  const cap = /\/\s*(\d+(?:\.\d+)?)W$/.exec(second[0] ?? '')
  const memory = /\/\s*(\d+)MiB$/.exec(second[1] ?? '')
  const mig = (third[2] ?? '').toLowerCase()
  gpus.push({
    index: Number(head[1]),
    name: head[2],
    persistence: head[3] === 'On' ? true : head[3] === 'Off' ? false : null,
    busId: busId[1],
    powerCapW: cap === null ? null : Number(cap[1]),
    memoryTotalMiB: memory === null ? null : Number(memory[1]),
    migMode: mig === 'enabled' ? 'enabled' : mig === 'disabled' ? 'disabled' : null,
  })
}

function pushMigDevice(lines: readonly string[], devices: SmiTableMigDevice[]): void {
  const first = cellsOf(lines[0])
  const ids = /^(\d+)\s+(\d+)\s+(\d+)\s+(\d+)$/.exec(first[0] ?? '')
  if (ids === null) return
  const [gpuIndex, gpuInstanceId, computeInstanceId, deviceIndex] = ids.slice(1).map(Number)
  const memory = /\/\s*(\d+)MiB$/.exec(first[1] ?? '')
  // CIs of one GI print the GI's memory once, in the first of their rows, and leave the cell blank below.
  const sharing = [...devices].reverse().find((device) => device.gpuIndex === gpuIndex && device.gpuInstanceId === gpuInstanceId)
  const sm = /^(\d+)\b/.exec(first[2] ?? '')
  devices.push({
    gpuIndex,
    gpuInstanceId,
    computeInstanceId,
    deviceIndex,
    memoryTotalMiB: memory !== null ? Number(memory[1]) : (sharing?.memoryTotalMiB ?? null),
    smCount: sm === null ? null : Number(sm[1]),
  })
}

function pushProcess(line: string, processes: GpuProcess[]): void {
  const match = PROCESS.exec(line)
  if (match === null) return
  const id = (value: string | undefined) => (value === undefined || value === 'N/A' ? null : Number(value))
  processes.push({
    gpuIndex: Number(match[1]),
    gpuInstanceId: id(match[2]),
    computeInstanceId: id(match[3]),
    pid: Number(match[4]),
    name: match[6],
    usedMiB: id(match[7]),
  })
}
