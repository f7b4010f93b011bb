import type {GpuProcess, HostGpu, MigModeState} from './types.js'

/**
 * One GPU block of `nvidia-smi -q`: a HostGpu before the MIG listings are merged in. Name and UUID can be
 * unreadable here; the probe refuses such a GPU. Absent or unreadable fields are null and named in `unavailable`.
 */
export type SmiQueryGpu = Omit<HostGpu, 'name' | 'uuid' | 'migProfiles' | 'gpuInstances'> & {
  readonly name: string | null
  readonly uuid: string | null
}

export type SmiQuery = {
  readonly driverVersion: string | null
  readonly cudaVersion: string | null
  /** the "Attached GPUs" count, which can exceed gpus.length when the output was cut */
  readonly attachedGpus: number | null
  readonly gpus: readonly SmiQueryGpu[]
}

type TreeNode = {
  readonly key: string
  readonly value: string | null
  readonly indent: number
  readonly children: TreeNode[]
}

// What nvidia-smi prints instead of a value it could not read; bracketed forms come from --query-gpu and newer -q.
const UNREADABLE =
  /^\[?(N\/A|Insufficient Permissions|Not Found|Not Supported|Unknown Error|GPU requires reset|Requested functionality has been deprecated)\]?$/i

// "GPU 00000000:03:00.0": the only unindented line without " : " that opens a GPU block.
const GPU_HEADER = /^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$/

/**
 * Parses `nvidia-smi -q` (or -a, or -q -d SECTION) text by its indentation, not by the key column's width,
 * which widened in R580+. Key renames across drivers are folded here: Enforced/Current and Power/Requested
 * power limits, and the Power Readings block's three names.
 */
export function parseSmiQuery(text: string): SmiQuery {
  const roots = parseTree(text)
  const top = (key: string) => roots.find((node) => node.indent === 0 && node.key === key)?.value ?? null
  const gpuNodes = roots.filter((node) => node.indent === 0 && GPU_HEADER.test(node.key))
  const attached = numberIn(top('Attached GPUs'))
  return {
    driverVersion: readable(top('Driver Version')),
    cudaVersion: readable(top('CUDA Version')),
    attachedGpus: attached,
    gpus: gpuNodes.map((node, index) => gpuFrom(node, index)),
  }
}

function gpuFrom(node: TreeNode, index: number): SmiQueryGpu {
  const unavailable: string[] = []
  const field = <T>(name: string, value: T | null): T | null => {
    if (value === null) unavailable.push(name)
    return value
  }
  const at = (...path: string[]) => valueAt(node, path)

  const migCurrent = modeOf(at('MIG Mode', 'Current'))
  const migPending = modeOf(at('MIG Mode', 'Pending'))
  const migMode = migCurrent !== null && migPending !== null ? {current: migCurrent, pending: migPending} : null

  // R545+ call it "GPU Power Readings" next to "Module Power Readings" (the whole Grace Hopper module, not the GPU).
  const powerNode = childOf(node, 'GPU Power Readings') ?? childOf(node, 'Power Readings')
  const powerW = (...keys: string[]) => {
    for (const key of keys) {
      const found = powerNode === undefined ? undefined : childOf(powerNode, key)
      if (found !== undefined) return numberIn(found.value)
    }
    return null
  }

  const gpu: SmiQueryGpu = {
    index,
    name: field('name', readable(at('Product Name'))),
    uuid: field('uuid', readable(at('GPU UUID'))),
    busId: readable(at('PCI', 'Bus Id')) ?? GPU_HEADER.exec(node.key)![1],
    persistenceMode: field('persistenceMode', booleanOf(at('Persistence Mode'))),
    migMode: field('migMode', migMode),
    power: {
      // Before R545 "Enforced Power Limit" was what is in force and "Power Limit" what was asked for with -pl.
      currentW: field('power.currentW', powerW('Current Power Limit', 'Enforced Power Limit')),
      requestedW: field('power.requestedW', powerW('Requested Power Limit', 'Power Limit')),
      defaultW: field('power.defaultW', powerW('Default Power Limit')),
      minW: field('power.minW', powerW('Min Power Limit')),
      maxW: field('power.maxW', powerW('Max Power Limit')),
    },
    clocks: {
      maxGraphicsMHz: field('clocks.maxGraphicsMHz', numberIn(at('Max Clocks', 'Graphics'))),
      currentGraphicsMHz: field('clocks.currentGraphicsMHz', numberIn(at('Clocks', 'Graphics'))),
    },
    memoryTotalMiB: field('memoryTotalMiB', numberIn(at('FB Memory Usage', 'Total'))),
    processes: [],
    unavailable,
  }
  const processes = processesOf(node, index)
  if (processes === null) unavailable.push('processes')
  return {...gpu, processes: processes ?? []}
}

/**
 * The Processes block repeats "GPU instance ID / Compute instance ID / Process ID" per process, with Type, Name
 * and Used GPU Memory nested under Process ID on current drivers. Reading the block flat in order copes with
 * both nestings. Returns null when the block is missing (a -q -d output without it).
 */
function processesOf(gpu: TreeNode, gpuIndex: number): GpuProcess[] | null {
  const block = childOf(gpu, 'Processes')
  if (block === undefined) return null
  if (block.children.length === 0) return []
  type Draft = {gpuInstanceId: number | null; computeInstanceId: number | null; pid: number | null; name: string; usedMiB: number | null}
  const drafts: Draft[] = []
  const fresh = (): Draft => ({gpuInstanceId: null, computeInstanceId: null, pid: null, name: '', usedMiB: null})
  let current: Draft | undefined
  for (const entry of flatten(block.children)) {
    const key = entry.key.toLowerCase()
    if (key === 'gpu instance id') {
      current = fresh()
      drafts.push(current)
      current.gpuInstanceId = numberIn(entry.value)
    } else if (key === 'process id') {
      if (current === undefined || current.pid !== null) {
        current = fresh()
        drafts.push(current)
      }
      current.pid = numberIn(entry.value)
    } else if (current === undefined) {
      continue
    } else if (key === 'compute instance id') {
      current.computeInstanceId = numberIn(entry.value)
    } else if (key === 'name' || key === 'process name') {
      current.name = entry.value ?? ''
    } else if (key === 'used gpu memory') {
      current.usedMiB = numberIn(entry.value)
    }
  }
  return drafts
    .filter((draft) => draft.pid !== null)
    .map((draft) => ({
      gpuIndex,
      pid: draft.pid!,
      gpuInstanceId: draft.gpuInstanceId,
      computeInstanceId: draft.computeInstanceId,
      name: draft.name,
      usedMiB: draft.usedMiB,
    }))
}

function parseTree(text: string): TreeNode[] {
  const roots: TreeNode[] = []
  const stack: TreeNode[] = []
  for (const raw of text.split(/\r?\n/)) {
    if (raw.trim() === '' || /^=+.*=+$/.test(raw.trim())) continue
    const indent = raw.length - raw.trimStart().length
    const body = raw.trim()
    // The first "<spaces>:" separates key from value; values hold bare colons (bus IDs, times) but never " :".
    const separator = /\s+:(\s|$)/.exec(body)
    const node: TreeNode =
      separator === null
        ? {key: body, value: null, indent, children: []}
        : {key: body.slice(0, separator.index).trim(), value: body.slice(separator.index + separator[0].length).trim(), indent, children: []}
    while (stack.length > 0 && stack[stack.length - 1].indent >= indent) stack.pop()
    if (stack.length === 0) roots.push(node)
    else stack[stack.length - 1].children.push(node)
    stack.push(node)
  }
  return roots
}

function flatten(nodes: readonly TreeNode[]): TreeNode[] {
  return nodes.flatMap((node) => [node, ...flatten(node.children)])
}

function childOf(node: TreeNode, key: string): TreeNode | undefined {
  return node.children.find((child) => child.key === key)
}

function valueAt(node: TreeNode, path: readonly string[]): string | null {
  let cursor: TreeNode | undefined = node
  for (const key of path) {
    cursor = cursor === undefined ? undefined : childOf(cursor, key)
  }
  return cursor?.value ?? null
}

function readable(value: string | null): string | null {
  if (value === null || value === '' || UNREADABLE.test(value)) return null
  return value
}

/** "700.00 W", "143771 MiB", "1980 MHz" -> the number; anything unreadable -> null. */
function numberIn(value: string | null): number | null {
  const text = readable(value)
  if (text === null) return null
  const match = /^(-?\d+(?:\.\d+)?)(\s*[A-Za-z%/]+)?$/.exec(text)
  return match ? Number(match[1]) : null
}

function booleanOf(value: string | null): boolean | null {
  const text = readable(value)?.toLowerCase()
  if (text === 'enabled') return true
  if (text === 'disabled') return false
  return null
}

function modeOf(value: string | null): MigModeState | null {
  const flag = booleanOf(value)
  return flag === null ? null : flag ? 'enabled' : 'disabled'
}
