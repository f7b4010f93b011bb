import {describe, expect, it} from '@jest/globals'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'

const ROOT = process.cwd()

/** every series name `metrics` defines (gauge('NAME', ...) in box-metrics.ts) */
function exportedSeries(): Set<string> {
  const source = readFileSync(join(ROOT, 'src/measure/box-metrics.ts'), 'utf8')
  return new Set([...source.matchAll(/gauge\(\s*'([a-z_]+)'/g)].map((m) => `gpu_cosplay_${m[1]}`))
}

describe('contrib/grafana-dashboard.json', () => {
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'contrib/grafana-dashboard.json'), 'utf8'))
  const exprs: string[] = [
    ...dashboard.panels.flatMap((p: {targets: {expr: string}[]}) => p.targets.map((t) => t.expr)),
    ...dashboard.templating.list.map((v: {query: string}) => v.query),
  ]

  it('queries only series `gpu-cosplay metrics` exports', () => {
    const exported = exportedSeries()
    expect(exported.size).toBeGreaterThanOrEqual(12)
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/gpu_cosplay_[a-z_]+/g)].map((m) => m[0])))
    expect([...used].filter((name) => !exported.has(name))).toEqual([])
    // every series a lab would chart is on the dashboard
    expect([...exported].filter((name) => !used.has(name))).toEqual([])
  })

  it('has unique panel ids and a Prometheus data source input', () => {
    const ids = dashboard.panels.map((p: {id: number}) => p.id)
    expect(new Set(ids).size).toBe(ids.length)
    expect(dashboard.__inputs[0]).toMatchObject({name: 'DS_PROMETHEUS', pluginId: 'prometheus'})
  })
})
