import {readdirSync, readFileSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'

// The layers of ARCHITECTURE.md, left to right. A module may import its own layer and layers to its left.
const ORDER = [
  'core',
  'catalog',
  'host',
  'plan',
  'export',
  'apply',
  'container',
  'remote',
  'system',
  'client',
  'measure',
  'engine',
  'render',
  'shell',
  'commands',
] as const
const SRC = join(process.cwd(), 'src')

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : []
  })
}

function layerOf(pathInSrc: string): number {
  return ORDER.indexOf(pathInSrc.split('/')[0] as (typeof ORDER)[number])
}

function importsOf(text: string): string[] {
  const specifiers = [...text.matchAll(/(?:^|\n)\s*(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]/g)].map((m) => m[1])
  const dynamic = [...text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)].map((m) => m[1])
  return [...specifiers, ...dynamic]
}

/** Whether `spec`, imported by `file` (a path in src/), names a module of apply/. */
function reachesApply(file: string, spec: string): boolean {
  return spec.startsWith('.') && relative(SRC, join(SRC, file, '..', spec)).startsWith('apply/')
}

/** Every module of src/ with the modules it imports (static, type-only and dynamic alike), as paths in src/. */
function importGraph(): Map<string, string[]> {
  return new Map(
    sourceFiles(SRC).map((path) => {
      const file = relative(SRC, path)
      const local = importsOf(readFileSync(path, 'utf8')).filter((s) => s.startsWith('.'))
      return [file, local.map((spec) => relative(SRC, join(SRC, file, '..', spec)).replace(/\.js$/, '.ts'))]
    }),
  )
}

/** One import cycle (a path of modules back to where it started), depth first; null when there is none. */
function findCycle(graph: ReadonlyMap<string, readonly string[]>): string[] | null {
  const done = new Set<string>()
  const path: string[] = []
  const visit = (file: string): string[] | null => {
    const at = path.indexOf(file)
    if (at >= 0) return [...path.slice(at), file]
    if (done.has(file) || !graph.has(file)) return null
    path.push(file)
    for (const next of graph.get(file)!) {
      const cycle = visit(next)
      if (cycle) return cycle
    }
    path.pop()
    done.add(file)
    return null
  }
  for (const file of graph.keys()) {
    const cycle = visit(file)
    if (cycle) return cycle
  }
  return null
}

describe('import cycles', () => {
  it('src/ has none, counting type-only and dynamic imports: a type lives with the function that makes it', () => {
    const graph = importGraph()
    expect(graph.size).toBeGreaterThan(100)
    expect(findCycle(graph)?.join(' -> ') ?? null).toBeNull()
  })

  it('detects a cycle (the check can fail)', () => {
    expect(importsOf("import type {A} from './a.js'\nexport {b} from './b.js'\nconst c = await import('./c.js')")).toEqual(['./a.js', './b.js', './c.js'])
    const graph = new Map([
      ['d.ts', ['a.ts']],
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts', 'node:fs']],
      ['c.ts', ['a.ts']],
    ])
    expect(findCycle(graph)).toEqual(['a.ts', 'b.ts', 'c.ts', 'a.ts'])
    expect(findCycle(new Map([...graph, ['c.ts', []]]))).toBeNull()
  })
})

describe('layering', () => {
  const files = sourceFiles(SRC).filter((f) => relative(SRC, f).includes('/'))

  it('finds the layer folders', () => {
    expect(files.length).toBeGreaterThan(10)
    for (const f of files) expect(layerOf(relative(SRC, f))).toBeGreaterThanOrEqual(0)
  })

  it.each(files.map((f) => [relative(SRC, f)]))('%s imports no layer to its right', (file) => {
    const from = layerOf(file)
    const text = readFileSync(join(SRC, file), 'utf8')
    for (const spec of importsOf(text).filter((s) => s.startsWith('.'))) {
      const resolved = relative(SRC, join(SRC, file, '..', spec))
      const to = layerOf(resolved)
      if (to > from) throw new Error(`${file} imports ${spec} (${ORDER[to]} is right of ${ORDER[from]})`)
    }
  })

  it('keeps plan/ pure: no fs, processes, clock or environment', () => {
    for (const file of files.filter((f) => relative(SRC, f).startsWith('plan/'))) {
      const text = readFileSync(file, 'utf8')
      expect({file, fs: /node:fs|child_process|nano-spawn/.test(text)}).toEqual({file, fs: false})
      expect({file, env: /process\.env|Date\.now|new Date\(/.test(text)}).toEqual({file, env: false})
    }
  })

  // Commands call use cases (client/, measure/) and renderers take their types from them: the journal, books and
  // leases of apply/ stay behind the use cases that the engine serves members with too.
  it.each(
    files
      .map((f) => relative(SRC, f))
      .filter((f) => /^(commands|render)\//.test(f))
      .map((f) => [f]),
  )('%s imports nothing of apply/', (file) => {
    expect(importsOf(readFileSync(join(SRC, file), 'utf8')).filter((spec) => reachesApply(file, spec))).toEqual([])
  })

  it('detects a command or renderer reaching into apply/ (the check can fail)', () => {
    expect(reachesApply('commands/lease/hold.ts', '../../apply/lease-hold.js')).toBe(true)
    expect(reachesApply('render/render-down.ts', '../apply/tear-down.js')).toBe(true)
    expect(reachesApply('commands/down.ts', '../client/end-sessions.js')).toBe(false)
  })

  it('detects a backward import (the check can fail)', () => {
    expect(importsOf("import {x} from '../apply/journal.js'\nconst m = await import('../container/runtime.js')")).toEqual([
      '../apply/journal.js',
      '../container/runtime.js',
    ])
  })
})
