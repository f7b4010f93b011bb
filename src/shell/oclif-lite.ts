/**
 * A stand-in for the few parts of @oclif/core that `ls`, `info` and `plan --on` use, bundled in their place
 * into dist/fast.js (scripts/build.mjs aliases '@oclif/core' to this file there). Loading and configuring
 * oclif is most of what those commands cost; this parses only what it fully understands and throws
 * FallBack for anything else (help, an unknown or invalid flag, a missing argument...), and the caller then runs
 * the real CLI, which gives the real behaviour and the real errors. test/cli/fast-path.test.ts checks that
 * both print the same.
 */

/** package.json's version, written in by the build (esbuild `define`) */
declare const GPU_COSPLAY_VERSION: string

export class FallBack extends Error {}

type ParseFn = (input: string) => Promise<unknown>

export type LiteFlag = {
  type: 'option' | 'boolean'
  description?: string
  options?: readonly string[]
  default?: unknown
  exclusive?: readonly string[]
  dependsOn?: readonly string[]
  min?: number
  multiple?: boolean
  char?: string
  parse?: ParseFn
  helpValue?: string
}

export type LiteArg = {required?: boolean; description?: string; options?: readonly string[]}

type FlagOptions = Omit<Partial<LiteFlag>, 'type'>

export const Flags = {
  string: (options: FlagOptions = {}): LiteFlag => ({...options, type: 'option'}),
  boolean: (options: FlagOptions = {}): LiteFlag => ({...options, type: 'boolean'}),
  integer: (options: FlagOptions = {}): LiteFlag => ({
    ...options,
    type: 'option',
    parse: async (input: string) => {
      if (!/^-?\d+$/.test(input)) throw new FallBack()
      const value = Number(input)
      if (options.min !== undefined && value < options.min) throw new FallBack()
      return value
    },
  }),
}

export const Args = {
  string: (options: Partial<LiteArg> = {}): LiteArg => ({...options}),
}

export const ux = {
  stdout(text = ''): void {
    process.stdout.write(`${text}\n`)
  },
  colorizeJson(json: unknown): string {
    return JSON.stringify(json, null, 2)
  },
}

type CommandClass = {
  readonly flags?: Record<string, LiteFlag>
  readonly args?: Record<string, LiteArg>
  readonly enableJsonFlag?: boolean
  readonly strict?: boolean
}

export abstract class Command {
  static flags: Record<string, LiteFlag> = {}
  static args: Record<string, LiteArg> = {}
  static enableJsonFlag = false
  // the version oclif reads from package.json; the build writes it in (scripts/build.mjs)
  readonly config = {bin: 'gpu-cosplay', version: GPU_COSPLAY_VERSION}
  private json = false

  constructor(readonly argv: string[]) {}

  abstract run(): Promise<unknown>

  jsonEnabled(): boolean {
    return this.json
  }

  log(message = ''): void {
    if (!this.json) ux.stdout(message)
  }

  exit(): never {
    throw new FallBack()
  }

  async parse(command: CommandClass): Promise<{args: Record<string, unknown>; flags: Record<string, unknown>; argv: string[]}> {
    if (command.strict === false) throw new FallBack()
    const defined: Record<string, LiteFlag> = {...command.flags, ...(command.enableJsonFlag ? {json: {type: 'boolean'}} : {})}
    const raw: Record<string, string | true> = {}
    const positional: string[] = []
    const tokens = [...this.argv]
    while (tokens.length > 0) {
      const token = tokens.shift()!
      if (!token.startsWith('-')) {
        positional.push(token)
        continue
      }
      if (!token.startsWith('--') || token === '--') throw new FallBack()
      const [name, inline] = token.slice(2).split(/=(.*)/s, 2)
      const flag = defined[name]
      if (flag === undefined || flag.multiple || name in raw) throw new FallBack()
      if (flag.type === 'boolean') {
        if (inline !== undefined) throw new FallBack()
        raw[name] = true
      } else {
        const value = inline ?? tokens.shift()
        if (value === undefined || (inline === undefined && value.startsWith('-'))) throw new FallBack()
        raw[name] = value
      }
    }

    const flags: Record<string, unknown> = {}
    for (const [name, flag] of Object.entries(defined)) {
      const value = raw[name]
      if (value === undefined) {
        if (flag.default !== undefined) flags[name] = flag.default
        continue
      }
      if (flag.exclusive?.some((other) => other in raw)) throw new FallBack()
      if (flag.dependsOn?.some((other) => !(other in raw))) throw new FallBack()
      if (value === true) {
        flags[name] = true
        continue
      }
      if (flag.options && !flag.options.includes(value)) throw new FallBack()
      try {
        flags[name] = flag.parse ? await flag.parse(value) : value
      } catch {
        throw new FallBack()
      }
    }

    const argDefs = Object.entries(command.args ?? {})
    if (positional.length > argDefs.length) throw new FallBack()
    const args: Record<string, unknown> = {}
    argDefs.forEach(([name, arg], i) => {
      const value = positional[i]
      if (value === undefined && arg.required) throw new FallBack()
      if (value !== undefined && arg.options && !arg.options.includes(value)) throw new FallBack()
      if (value !== undefined) args[name] = value
    })
    this.json = flags.json === true
    return {args, flags, argv: positional}
  }
}
