import fs from 'node:fs'
import {fileURLToPath} from 'node:url'

/**
 * The copies of the published tables the catalog's measured figures come from (test/fixtures/reference/measured/),
 * read the way their authors wrote them: one row per markdown table line.
 */
const dir = fileURLToPath(new URL('../../fixtures/reference/measured', import.meta.url))

export type SourceRow = {readonly device: string; readonly id: string; readonly cells: readonly string[]}

function tableLines(file: string): string[][] {
  return fs
    .readFileSync(`${dir}/${file}`, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line))
    .slice(1)
    .map((line) =>
      line
        .trim()
        .replace(/^\||\|$/g, '')
        .split('|')
        .map((cell) => cell.trim()),
    )
}

/** zzc0721/torch-performance-test-data database.md: device | fp32 | tf32 | fp16 | bf16 | note | contributor. Id: "device | handle | FP32 x". */
export function zzcRows(): SourceRow[] {
  return tableLines('zzc0721-database.md').map((cells) => {
    const handle = /\[([^\]]+)\]/.exec(cells[6])?.[1] ?? cells[6]
    return {device: cells[0], id: `${cells[0]} | ${handle} | FP32 ${cells[1]}`, cells}
  })
}

/** chsasank/device-benchmarks README summary: Device | Device Type | FP32 | FP16 | BF16 | INT8 | Memory Bandwidth (GB/s). Id: the device. */
export function chsasankRows(): SourceRow[] {
  return tableLines('chsasank-device-benchmarks.md').map((cells) => ({device: cells[0], id: cells[0], cells}))
}

export const ZZC_COLUMNS = {fp32Tflops: 1, tf32Tflops: 2, fp16Tflops: 3, bf16Tflops: 4} as const
export const ZZC_NOTE = 5
export const CHSASANK_COPY = 6

/** A table cell as a number; empty, "N/A" and the like are no figure. */
export function cellNumber(cell: string | undefined): number | null {
  const n = Number(cell)
  return cell === undefined || cell.trim() === '' || !Number.isFinite(n) ? null : n
}

/** The rows' author calls their machine bare metal ("实体机", a physical machine). */
export function isBareMetal(row: SourceRow): boolean {
  return row.cells[ZZC_NOTE].includes('实体机')
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** A source device name without its trailing memory size or parenthesis ("RTX 3090 24GB", "4090 (WSL2)"). */
export function withoutSuffix(device: string): string {
  return device
    .replace(/\s*\([^)]*\)\s*$/, '')
    .replace(/[\s-]*\d+\s?G[B]?$/i, '')
    .trim()
}
