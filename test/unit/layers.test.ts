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

  it('detects a backward import (the check can fail)', () => {
    expect(importsOf("import {x} from '../apply/engine.js'\nconst m = await import('../container/runtime.js')")).toEqual([
      '../apply/engine.js',
      '../container/runtime.js',
    ])
  })
})
