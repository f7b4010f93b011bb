import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'

import {METRICS_CONTENT_TYPE, renderMetrics} from './box-metrics.js'
import type {HostView} from '../client/read-host-status.js'

/** a scrape waits at most this long for a read (nvidia-smi has its own, longer, time limit) */
const READ_TIMEOUT_MS = 15_000
/** reads younger than this are served again: two scrapers cost one read */
const CACHE_MS = 1000

export type MetricsServer = {readonly url: string; readonly closed: Promise<void>}

/** An HTTP server for /metrics until SIGINT, SIGTERM or SIGHUP; each read of the box is `read` (here, or the engine's answer). */
export async function serveMetrics(host: string, port: number, read: () => Promise<HostView>): Promise<MetricsServer> {
  const scrape = cachedScrape(read)
  const server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, {Allow: 'GET, HEAD'}).end()
      return
    }
    if (path === '/') {
      response.writeHead(200, {'Content-Type': 'text/html'}).end('<html><body><a href="/metrics">gpu-cosplay metrics</a></body></html>\n')
      return
    }
    if (path !== '/metrics') {
      response.writeHead(404, {'Content-Type': 'text/plain'}).end('not found: try /metrics\n')
      return
    }
    scrape().then(
      (body) => response.writeHead(200, {'Content-Type': METRICS_CONTENT_TYPE}).end(request.method === 'HEAD' ? undefined : body),
      (error: unknown) => response.writeHead(503, {'Content-Type': 'text/plain'}).end(`gpu-cosplay could not read the box: ${(error as Error).message}\n`),
    )
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => resolve())
  })
  const address = server.address() as AddressInfo
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address
  const closed = new Promise<void>((resolve) => {
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const
    const stop = () => {
      for (const s of signals) process.off(s, stop)
      server.close(() => resolve())
      server.closeAllConnections()
    }
    for (const s of signals) process.on(s, stop)
  })
  return {url: `http://${shown}:${address.port}/metrics`, closed}
}

/** one read shared by every scrape within CACHE_MS of its start, and by those that arrive while it runs */
function cachedScrape(read: () => Promise<HostView>): () => Promise<string> {
  let last: {startedAt: number; body: Promise<string>} | null = null
  return () => {
    const now = Date.now()
    if (last && now - last.startedAt < CACHE_MS) return last.body
    const body = withTimeout(
      read().then((view) => renderMetrics(view)),
      READ_TIMEOUT_MS,
    )
    const entry = {startedAt: now, body}
    // a failed read is not served again
    body.catch(() => {
      if (last === entry) last = null
    })
    last = entry
    return body
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`reading the box took longer than ${ms / 1000} s`)), ms)
  })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}
