/**
 * A Docker engine on a Unix socket that answers the few calls the tests below need, and records every request line as
 * it arrived (method and raw URL): what the funnel sends, seen from the engine's side of the socket.
 */
import {mkdtempSync, rmSync} from 'node:fs'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

export type FakeEngine = {
  readonly socketPath: string
  /** "METHOD /raw/url", in order */
  readonly requests: string[]
  close(): Promise<void>
}

/** What an exec prints: `stdoutBytes` bytes of "x" on its stdout, in frames of the engine's multiplexed stream. */
export type FakeEngineOptions = {readonly execStdoutBytes?: number}

export async function startFakeEngine(options: FakeEngineOptions = {}): Promise<FakeEngine> {
  const dir = mkdtempSync(join(tmpdir(), 'gc-fake-engine-'))
  const socketPath = join(dir, 'docker.sock')
  const requests: string[] = []
  const sockets = new Set<Socket>()
  const json = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, {'Content-Type': 'application/json'})
    res.end(JSON.stringify(body))
  }
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    requests.push(`${req.method} ${req.url}`)
    req.resume()
    const url = req.url ?? ''
    if (/^\/images\/.*\/json$/.test(url)) return json(res, 404, {message: 'no such image'})
    if (/^\/containers\/[^/]+\/exec$/.test(url)) return json(res, 201, {Id: 'exec1'})
    if (url === '/exec/exec1/json') return json(res, 200, {Running: false, ExitCode: 0})
    json(res, 404, {message: `the fake engine does not serve ${url}`})
  })
  server.on('connection', (socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  // exec start with hijack: a 101, then the multiplexed stream (an 8-byte header per frame: stream 1 = stdout)
  server.on('upgrade', (req: IncomingMessage, socket: Socket) => {
    requests.push(`${req.method} ${req.url}`)
    socket.write('HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\nConnection: Upgrade\r\nUpgrade: tcp\r\n\r\n')
    let left = options.execStdoutBytes ?? 0
    const frameBytes = 32 * 1024
    const next = () => {
      while (left > 0) {
        const size = Math.min(frameBytes, left)
        left -= size
        const header = Buffer.alloc(8)
        header[0] = 1
        header.writeUInt32BE(size, 4)
        if (!socket.write(Buffer.concat([header, Buffer.alloc(size, 'x')]))) return void socket.once('drain', next)
      }
      socket.end()
    }
    next()
  })
  await new Promise<void>((resolve) => server.listen(socketPath, resolve))
  return {
    socketPath,
    requests,
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise<void>((resolve) => server.close(() => resolve()))
      rmSync(dir, {recursive: true, force: true})
    },
  }
}
