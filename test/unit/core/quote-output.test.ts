import {quoteOutput, saidOrQuoted} from '../../../src/core/quote-output.js'

describe('quoteOutput', () => {
  test('a short line is quoted whole, with its size', () => {
    expect(quoteOutput('Profile list moved to --format=json')).toBe('"Profile list moved to --format=json" (35 bytes)')
    expect(quoteOutput('x')).toBe('"x" (1 byte)')
  })

  test('nothing, or nothing but white space', () => {
    expect(quoteOutput('')).toBe('no output')
    expect(quoteOutput('', '')).toBe('no output')
    expect(quoteOutput(' \n\t\n')).toBe('no text (4 bytes)')
  })

  test('the first three non-blank lines, joined by a visible \\n, "..." where more followed', () => {
    expect(quoteOutput('a\n\n  b  \nc\nd\n')).toBe('"a\\nb\\nc..." (13 bytes)')
    expect(quoteOutput('a\r\nb')).toBe('"a\\nb" (4 bytes)')
  })

  test('at most 200 characters, cut by code point', () => {
    const long = `${'x'.repeat(199)}😀😀 tail`
    const quoted = quoteOutput(long)
    expect(quoted).toBe(`"${'x'.repeat(199)}😀..." (${Buffer.byteLength(long)} bytes)`)
    expect(quoted).not.toMatch(/[\ud800-\udfff](?![\udc00-\udfff])/u)
  })

  test('terminal sequences dropped, each run of other non-text shown as one "?", nothing raw left', () => {
    const binary = '\u001b[?25l\u001b]0;title\u0007ELF\u0000\u0001\u0002\ufffd\ufffd ok\u202e evil\u0085end'
    const quoted = quoteOutput(binary)
    expect(quoted).toMatch(/^"ELF\? ok\? evil\?end" \(\d+ bytes\)$/)
    // eslint-disable-next-line no-control-regex
    expect(quoted).not.toMatch(/[\u0000-\u001f\u007f-\u009f\ufffd\u202e]/)
  })

  test('quotes and backslashes of the output cannot end the quote early', () => {
    expect(quoteOutput('say "hi" \\ bye')).toBe('"say \\"hi\\" \\\\ bye" (14 bytes)')
  })

  test('stderr and stdout are quoted as one, their sizes added', () => {
    expect(quoteOutput('sudo: a password is required', '')).toBe('"sudo: a password is required" (28 bytes)')
    expect(quoteOutput('err', 'out')).toBe('"err\\nout" (6 bytes)')
  })

  test('an invalid UTF-8 byte, decoded as U+FFFD, counts as one byte', () => {
    const decoded = Buffer.from([0x41, 0xff, 0xfe, 0x42]).toString('utf8')
    expect(quoteOutput(decoded)).toBe('"A?B" (4 bytes)')
  })
})

describe('saidOrQuoted', () => {
  test('a short printable reason is said as it is', () => {
    expect(saidOrQuoted('Insufficient Permissions', 4, '', 'Failed to set ...: Insufficient Permissions')).toBe('Insufficient Permissions')
  })

  test('no reason, a long one, or one with non-text in it: the exit status and a quote of the output', () => {
    expect(saidOrQuoted(null, 1, '', '')).toBe('exit status 1, no output')
    expect(saidOrQuoted('x'.repeat(201), 1, 'x'.repeat(201))).toBe(`exit status 1, "${'x'.repeat(200)}..." (201 bytes)`)
    expect(saidOrQuoted('\u001b[2Jboom', 9, '\u001b[2Jboom\n')).toBe('exit status 9, "boom" (9 bytes)')
  })
})
