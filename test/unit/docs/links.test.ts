import {existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {dirname, join} from 'node:path'

import {afterAll, describe, expect, it} from '@jest/globals'

/** The pages a reader follows links between: README.md, docs/*.md, runtime-hooks/README.md and ARCHITECTURE.md. */
function pages(root: string): string[] {
  const docs = existsSync(join(root, 'docs'))
    ? readdirSync(join(root, 'docs'))
        .filter((name) => name.endsWith('.md'))
        .sort()
        .map((name) => `docs/${name}`)
    : []
  return ['README.md', ...docs, 'runtime-hooks/README.md', 'ARCHITECTURE.md'].filter((file) => existsSync(join(root, file)))
}

/** The page's lines with fenced code blocks blanked (a link or heading in code is text), so line numbers stay. */
function prose(text: string): string[] {
  let fence: string | null = null
  return text.split('\n').map((line) => {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line)?.[1]
    if (fence === null) {
      if (marker) fence = marker
      return marker ? '' : line
    }
    if (marker && marker[0] === fence[0] && marker.length >= fence.length && line.trim() === marker) fence = null
    return ''
  })
}

/** GitHub's anchor for a heading (github-slugger): the text as rendered, lower case, punctuation dropped, spaces to '-'. */
function githubSlug(heading: string): string {
  return heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/`/g, '')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-')
}

/** Every anchor a page has: one per ATX heading (a repeated one gets -1, -2, ...), and explicit `<a id/name>`. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>()
  const anchors = new Set<string>()
  for (const line of prose(text)) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/.exec(line)?.[1]
    if (heading !== undefined) {
      const slug = githubSlug(heading)
      const count = seen.get(slug) ?? 0
      seen.set(slug, count + 1)
      anchors.add(count === 0 ? slug : `${slug}-${count}`)
    }
    for (const m of line.matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(m[1])
  }
  return anchors
}

/** The link targets on one line of prose: inline links and images, and reference definitions; code spans are text. */
function targetsOf(line: string): string[] {
  const text = line.replace(/(`+)[^`]*?\1/g, '')
  const inline = [...text.matchAll(/!?\[(?:[^[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1])
  const definition = /^ {0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?/.exec(text)?.[1]
  return definition === undefined ? inline : [...inline, definition]
}

/** `file:line: target (why)` for every relative link that does not resolve: a missing file, or a missing heading. */
function brokenLinks(root: string): string[] {
  const broken: string[] = []
  for (const file of pages(root)) {
    prose(readFileSync(join(root, file), 'utf8')).forEach((line, index) => {
      for (const target of targetsOf(line)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue // https:, mailto: ...
        const [pathPart, anchor] = target.split('#', 2) as [string, string | undefined]
        const path = pathPart === '' ? join(root, file) : join(pathPart.startsWith('/') ? root : dirname(join(root, file)), decodeURIComponent(pathPart))
        const where = `${file}:${index + 1}: ${target}`
        if (!existsSync(path)) broken.push(`${where} (no such file)`)
        else if (anchor !== undefined && statSync(path).isFile() && path.endsWith('.md') && !anchorsOf(readFileSync(path, 'utf8')).has(anchor)) {
          broken.push(`${where} (no heading with that anchor)`)
        }
      }
    })
  }
  return broken
}

const temps: string[] = []
afterAll(() => temps.forEach((dir) => rmSync(dir, {recursive: true, force: true})))

describe('links between the docs', () => {
  it('every relative link in README.md, docs/, runtime-hooks/README.md and ARCHITECTURE.md reaches a file, and its heading', () => {
    expect(pages(process.cwd())).toEqual(expect.arrayContaining(['README.md', 'docs/commands.md', 'runtime-hooks/README.md']))
    expect(brokenLinks(process.cwd())).toEqual([])
  })

  it('reports a missing file, a missing heading and a missing anchor of the same page, and nothing in code', () => {
    const root = mkdtempSync(join(tmpdir(), 'gpu-cosplay-links-'))
    temps.push(root)
    mkdirSync(join(root, 'docs'))
    writeFileSync(join(root, 'docs', 'x.md'), '# X\n\n## What `up` starts: a container, ssh\n\n## Twice\n\n## Twice\n')
    writeFileSync(
      join(root, 'README.md'),
      [
        '# Front door',
        '[fine](docs/x.md#what-up-starts-a-container-ssh), [second of two](docs/x.md#twice-1), [self](#front-door), [web](https://example.com/a.md)',
        '[gone](docs/missing.md) and [no heading](docs/x.md#nowhere)',
        '`[in code](docs/missing.md)`',
        '```',
        '[in a fence](docs/missing.md)',
        '```',
        '[no anchor here](#nowhere)',
      ].join('\n'),
    )
    expect(brokenLinks(root)).toEqual([
      'README.md:3: docs/missing.md (no such file)',
      'README.md:3: docs/x.md#nowhere (no heading with that anchor)',
      'README.md:8: #nowhere (no heading with that anchor)',
    ])
  })

  it.each([
    ['Sharing one GPU: what is per-session, what is per-GPU, what restore means', 'sharing-one-gpu-what-is-per-session-what-is-per-gpu-what-restore-means'],
    ['Seeing the box: `status`, `status --watch`, `metrics`', 'seeing-the-box-status-status---watch-metrics'],
    ['`gpu-cosplay lease hold`', 'gpu-cosplay-lease-hold'],
    ['Several devices (`up --count N`)', 'several-devices-up---count-n'],
    [
      'JAX / CuPy (set by the container env; the host computes the same in TypeScript)',
      'jax--cupy-set-by-the-container-env-the-host-computes-the-same-in-typescript',
    ],
  ])('GitHub anchors %s as #%s', (heading, slug) => {
    expect(githubSlug(heading)).toBe(slug)
  })
})
