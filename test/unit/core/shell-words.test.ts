import {shellLine, shellQuote, singleQuote} from '../../../src/core/shell-words.js'

describe('singleQuote', () => {
  it("single-quotes every word, a quote inside as '\\''", () => {
    expect(singleQuote("it's")).toBe(`'it'\\''s'`)
    expect(singleQuote('')).toBe(`''`)
  })
})

describe('shellQuote', () => {
  it('leaves a plain word as it is and single-quotes the rest', () => {
    expect(shellQuote('--name=gpu-0')).toBe('--name=gpu-0')
    expect(shellQuote('two words')).toBe(`'two words'`)
    expect(shellQuote('$HOME')).toBe(`'$HOME'`)
    expect(shellQuote('')).toBe(`''`)
  })
})

describe('shellLine', () => {
  it('joins the words, each quoted where it needs it', () => {
    expect(shellLine(['echo', "it's", 'ok'])).toBe(`echo 'it'\\''s' ok`)
  })
})
