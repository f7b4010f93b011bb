import type {GpuStatus} from '../client/read-host-status.js'
import {leaseLine} from './render-lease.js'
import type {HostView, SessionView} from '../client/read-host-status.js'
import {sliceOf} from './render-ps.js'

/** How the picture is drawn: the terminal's width, and whether it takes colour. */
export type BoxStyle = {readonly cols: number; readonly color: boolean}

/** Colour on a terminal unless NO_COLOR is set (https://no-color.org); plain ASCII when piped. */
export function terminalStyle(stream: {isTTY?: boolean; columns?: number} = process.stdout, env: NodeJS.ProcessEnv = process.env): BoxStyle {
  const isTty = stream.isTTY === true
  return {cols: isTty && stream.columns ? stream.columns : 80, color: isTty && (env.NO_COLOR ?? '') === ''}
}

const PLAIN: BoxStyle = {cols: 80, color: false}

// background colours for the holders (black text on them), and dim grey for what is free
const HOLDER_COLOURS = ['\u001B[30;46m', '\u001B[30;43m', '\u001B[30;45m', '\u001B[30;42m', '\u001B[30;44m', '\u001B[30;41m']
const FREE_COLOUR = '\u001B[2m'
const ORPHAN_COLOUR = '\u001B[30;47m'
const BOLD = '\u001B[1m'
const RESET = '\u001B[0m'

/** a run of slices; `short` is shown when `label` does not fit (a holder's letter) */
type Cell = {start: number; size: number; label: string; short?: string; colour: string}

/**
 * Each GPU as a strip of its memory slices (one cell for a GPU with MIG off): which session holds which slices,
 * what is free, the largest profile that still fits; under it a line or two per session: SMs granted of the
 * slice's, VRAM cap, and the GPU-wide clock and power it shares.
 */
export function renderBox(s: HostView, style: BoxStyle = PLAIN): string[] {
  return s.gpus.flatMap((g) => [...gpuPicture(g, s.sessions, style), ''])
}

function gpuPicture(g: GpuStatus, sessions: readonly SessionView[], style: BoxStyle): string[] {
  const paint = (colour: string, text: string) => (style.color ? `${colour}${text}${RESET}` : text)
  const mig = g.migEnabled === null ? 'n/a' : g.migEnabled ? 'on' : 'off'
  // a --host box of an earlier version reports no placement: its instances, a line each, as it showed them
  if (!('freeMemorySlices' in g)) return earlierGpuLines(g as Pick<GpuStatus, 'index' | 'name' | 'uuid' | 'leases' | 'instances'>, mig)
  const clock = g.clockLockedMHz === null ? 'unlocked' : `${g.clockLockedMHz} MHz`
  const power = g.powerLimitW === null ? '?' : `${g.powerLimitW} W`
  const header = `${paint(BOLD, `GPU ${g.index}: ${g.name}`)}  MIG ${mig}  clock ${clock}  power limit ${power}`
  // a spread session is drawn on every GPU one of its ranks is on
  const here = sessions.filter((x) => x.kind === 'up' && (x.gpuUuid === g.uuid || (x.ranks ?? []).some((r) => r.gpuIndex === g.index)))
  const letters = new Map(
    [...here]
      .sort((a, b) => (a.placement?.start ?? 99) - (b.placement?.start ?? 99) || a.name.localeCompare(b.name))
      .map((x, i) => [x.name, String.fromCodePoint(65 + (i % 26))]),
  )
  const colourOf = (name: string) => HOLDER_COLOURS[(letters.get(name)!.codePointAt(0)! - 65) % HOLDER_COLOURS.length]
  const holderLabel = (x: SessionView) => `${letters.get(x.name)} ${x.owner}/${x.target ?? '-'}`

  let cells: Cell[]
  let slices: number
  if (g.memorySlices !== null) {
    slices = g.memorySlices
    cells = g.instances.map((i) => {
      const holder = here.find((x) => x.name === i.owner)
      return holder
        ? {...i.placement, label: holderLabel(holder), short: letters.get(holder.name), colour: colourOf(holder.name)}
        : {...i.placement, label: `? GI ${i.gpuInstanceId}`, colour: ORPHAN_COLOUR}
    })
    cells.push(...g.freeMemorySlices.map((k) => ({start: k, size: 1, label: 'free', colour: FREE_COLOUR})))
  } else {
    slices = 1
    const whole = here.find((x) => x.mig === null)
    cells = [
      whole
        ? {start: 0, size: 1, label: `${holderLabel(whole)} (whole GPU)`, colour: colourOf(whole.name)}
        : {start: 0, size: 1, label: g.migEnabled ? 'free' : 'free (whole GPU, MIG off)', colour: FREE_COLOUR},
    ]
  }
  cells.sort((a, b) => a.start - b.start)
  const cellWidth = Math.max(4, Math.floor((style.cols - 3) / slices))
  const strip = `  |${cells.map((c) => paint(c.colour, fit(c.label, c.size * cellWidth - 1, c.short)) + '|').join('')}`
  const ruler =
    slices > 1
      ? [
          `   ${Array.from({length: slices}, (_, k) => String(k).padEnd(cellWidth))
            .join('')
            .trimEnd()}`,
        ]
      : []
  const free =
    g.memorySlices === null
      ? []
      : [
          `  free: ${g.freeMemorySlices.length === 0 ? 'no slice' : `slices ${ranges(g.freeMemorySlices)}`}; largest free profile: ${g.largestFreeProfile ?? 'none'}`,
        ]
  return [
    header,
    ...Object.entries(g.leases).map(([setting, lease]) => leaseLine(setting, lease!)),
    strip,
    ...ruler,
    ...free,
    ...[...here]
      .sort((a, b) => letters.get(a.name)!.localeCompare(letters.get(b.name)!))
      .flatMap((x) => sessionLines(x, letters.get(x.name)!, g, style, paint, colourOf(x.name))),
  ]
}

function earlierGpuLines(g: Pick<GpuStatus, 'index' | 'name' | 'uuid' | 'leases' | 'instances'>, mig: string): string[] {
  return [
    `GPU ${g.index}: ${g.name} ${g.uuid}  MIG ${mig}`,
    ...Object.entries(g.leases).map(([setting, lease]) => leaseLine(setting, lease!)),
    ...g.instances.map((i) => `  GI ${i.gpuInstanceId} ${i.profile}: ${i.owner ?? 'ORPHAN (no gpu-cosplay session owns it)'}`),
  ]
}

function sessionLines(x: SessionView, letter: string, g: GpuStatus, style: BoxStyle, paint: (c: string, t: string) => string, colour: string): string[] {
  const slices = x.placement && `slice${x.placement.size > 1 ? 's' : ''} ${ranges(span(x.placement))}`
  const where = !x.mig
    ? 'whole GPU'
    : x.mig.gpuInstanceId === null
      ? sliceOf(x.mig)
      : `${x.mig.profile} GI ${x.mig.gpuInstanceId}${slices ? ` ${slices}` : ' (instance gone)'}`
  const first = `  ${paint(colour, ` ${letter} `)} ${x.name}  ${x.owner}  ${x.target ?? '-'}  ${where}  ${x.phase}${x.crashed ? ' (crashed)' : ''}`
  const sh = x.shaping
  if (!sh) return [first]
  const sms = sh.sliceSmCount === null ? `${sh.smCount} SMs` : `${sh.smCount} of ${sh.sliceSmCount} SMs`
  const mps = sh.mpsThreadPercentage === null ? '' : ` (MPS ${sh.mpsThreadPercentage}%)`
  const used = x.memoryUsedMiB === null ? '' : `, ${gib(x.memoryUsedMiB)} used`
  const clock = g.clockLockedMHz === null ? 'clock unlocked' : `clock ${g.clockLockedMHz} MHz${sh.clockMHz === null ? '' : ' (its lock)'}`
  const power = g.powerLimitW === null ? 'power ?' : `power ${g.powerLimitW} W${sh.powerLimitW === null ? '' : ' (its limit)'}`
  // the limit the driver holds the session to (MPS pinned limit or its slice), else only the costume's cap
  const limit =
    sh.hardLimitMiB === null || sh.hardLimitMiB === undefined
      ? `VRAM cap ${gib(sh.vramCapMiB)} (costume only)`
      : `VRAM ${gib(sh.vramCapMiB)}, limit ${gib(sh.hardLimitMiB)}`
  const granted = `      ${sms}${mps}, ${limit}${used}`
  const shares = `shares ${clock}, ${power}`
  return granted.length + shares.length + 2 <= style.cols ? [first, `${granted}; ${shares}`] : [first, granted, `      ${shares}`]
}

function gib(mib: number): string {
  return `${(mib / 1024).toFixed(1)} GiB`
}

function span(p: {start: number; size: number}): number[] {
  return Array.from({length: p.size}, (_, k) => p.start + k)
}

/** [0,1,2,5] -> "0-2, 5" */
function ranges(values: readonly number[]): string {
  const out: string[] = []
  for (let i = 0; i < values.length; i++) {
    let j = i
    while (j + 1 < values.length && values[j + 1] === values[j] + 1) j++
    out.push(i === j ? String(values[i]) : `${values[i]}-${values[j]}`)
    i = j
  }
  return out.join(', ')
}

/** the label in exactly `width` columns (or the short one when it does not fit): cut with "~" when too long, padded */
function fit(label: string, width: number, short?: string): string {
  if (width <= 0) return ''
  // a narrow cell shows the holder's letter rather than a stub of its name
  const text = short !== undefined && label.length + 1 > width && width < 10 ? ` ${short}` : ` ${label}`
  return text.length > width ? `${text.slice(0, Math.max(0, width - 1))}~` : text.padEnd(width)
}
