/** Left-aligned text columns; numbers (an estimate may lead with "~") are right-aligned so decimals line up. */
export function formatTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)))
  const isNumeric = header.map((_, i) => rows.length > 0 && rows.every((r) => /^~?[-+]?[\d.]+%?$|^-$/.test(r[i] ?? '')))
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (isNumeric[i] ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd()
  return [line(header), ...rows.map(line)].join('\n')
}

export function fixed(value: number | null, digits = 1): string {
  return value === null ? '-' : value.toFixed(digits)
}
