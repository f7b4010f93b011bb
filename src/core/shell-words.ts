/** POSIX single-quoting where a word needs it: `it's` -> `'it'\''s'`; plain words stay as they are. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(word) ? word : singleQuote(word)
}

/** POSIX single-quoting of any word, plain ones too (a quote inside becomes '\''). */
export function singleQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`
}

export function shellLine(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ')
}
