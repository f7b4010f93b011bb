import {InputError} from '../core/errors.js'

export type MixItem = {readonly name: string; readonly count: number}

/** `3090x2,t4x3` -> [{name: '3090', count: 2}, {name: 't4', count: 3}]; a name without `xN` counts once. */
export function parseMix(text: string): MixItem[] {
  const items = text.split(',').map((part) => part.trim())
  return items.map((part) => {
    const match = /^(.+?)(?:x(\d+))?$/i.exec(part)
    const count = match?.[2] === undefined ? 1 : Number(match[2])
    if (!match || match[1].trim() === '' || !Number.isInteger(count) || count < 1 || count > 7) {
      throw new InputError('BAD_MIX', `--mix entry "${part}" is not TARGETxCOUNT with a count of 1 to 7`, {fix: ['e.g. --mix 3090x2,t4x3']})
    }
    return {name: match[1].trim(), count}
  })
}
