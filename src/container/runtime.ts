/**
 * The one funnel to the Docker daemon: nothing else imports dockerode. Callers load this module with
 * `await import()` (dockerode is heavy), and nothing here does work at module top.
 */
import {readdir} from 'node:fs/promises'
import {join} from 'node:path'
import {PassThrough, type Readable, type Writable} from 'node:stream'
import createDebug from 'debug'
import Docker from 'dockerode'
import {ContainerError} from '../core/errors.js'
import type {CommandOutput} from '../core/executor.js'
import {assertImageRef} from '../core/image-ref.js'
import {DEBUG_NS, LABELS} from '../core/names.js'

const debug = createDebug(DEBUG_NS.container)

/** One event of a build's progress stream, as the Docker daemon sends it. */
export type BuildEvent = {
  readonly stream?: string
  readonly status?: string
  readonly id?: string
  readonly progress?: string
  readonly error?: string
  readonly errorDetail?: {message?: string; code?: number}
  readonly aux?: {ID?: string}
}

export type BuildOptions = {
  /** folder the context is taken from; its .dockerignore is honoured */
  contextDir: string
  /** entries of contextDir to send, e.g. ['docker', 'runtime-hooks'] */
  src: readonly string[]
  /** Dockerfile path inside the context */
  dockerfile: string
  tag: string
  buildArgs?: Readonly<Record<string, string>>
  labels?: Readonly<Record<string, string>>
  noCache?: boolean
  onProgress?: (event: BuildEvent) => void
}

export type BuildResult = {readonly imageId: string | null; readonly tag: string}

export type ImageInfo = {
  readonly id: string
  readonly tags: readonly string[]
  readonly sizeBytes: number
  readonly labels: Readonly<Record<string, string>>
  /** carries io.gpu-cosplay.image=1 */
  readonly isCosplayImage: boolean
  readonly cosplayVersion: string | null
  /** a guess from labels and config (no probe container): cosplay images, EXPOSE 22, or an sshd entrypoint/cmd */
  readonly hasSshd: boolean
  readonly entrypoint: readonly string[] | null
  readonly cmd: readonly string[] | null
  readonly env: Readonly<Record<string, string>>
}

export type ContainerSpec = {
  name: string
  image: string
  labels: Readonly<Record<string, string>>
  env: Readonly<Record<string, string>>
  /** MIG or GPU UUIDs for the nvidia DeviceRequest; null for no GPU */
  deviceIds: readonly string[] | null
  /** host port for sshd; 0 or undefined lets Docker choose. null publishes nothing. */
  sshPort?: number | null
  /** default 127.0.0.1 */
  sshBindAddress?: string
  /** 'host:container[:ro]' */
  binds?: readonly string[]
  shmSizeBytes?: number
  /** the container's memory, swap included (no swap beyond it) */
  memoryBytes?: number
  /** processes and threads */
  pidsLimit?: number
  entrypoint?: readonly string[]
  cmd?: readonly string[]
  /** docker --init (tini from the Docker daemon), for images without their own */
  init?: boolean
  /** 'uid:gid' the container's processes run as; absent: the image's user */
  user?: string
  /** Linux capabilities taken away ('ALL') and given back, e.g. ['CHOWN']; absent: Docker's default set */
  capDrop?: readonly string[]
  capAdd?: readonly string[]
  /** no process in the container gains privileges through execve (setuid files such as sudo do nothing) */
  noNewPrivileges?: boolean
}

export type StartedContainer = {
  readonly id: string
  readonly name: string
  /** the host port sshd is published on, or null */
  readonly sshPort: number | null
  readonly sshBindAddress: string | null
}

export type ContainerSummary = {
  readonly id: string
  readonly name: string
  readonly image: string
  /** running, exited, created, ... */
  readonly state: string
  readonly status: string
  readonly labels: Readonly<Record<string, string>>
  readonly sshPort: number | null
}

export type DockerExecOptions = {
  tty?: boolean
  /** input for the command; its end closes the command's stdin */
  stdin?: Readable
  user?: string
  workingDir?: string
  env?: Readonly<Record<string, string>>
  /** where output goes; without them it is collected into the result (the first EXEC_KEEP_BYTES of each) */
  stdout?: Writable
  stderr?: Writable
  /** initial tty size */
  size?: {rows: number; cols: number}
  /** called once the command runs, with a handle to resize its tty */
  onStart?: (control: {resize(rows: number, cols: number): Promise<void>}) => void
  /**
   * give up (CONTAINER_EXEC_TIMEOUT) when the command has not ended by then: for what root runs in a container whose
   * user could make it hang (a FIFO where a file is written, an image of their own), so that no user stalls the caller
   */
  timeoutMs?: number
}

export type DockerExecResult = CommandOutput

/** What an image holds at a path, as Docker's archive API states it (the path's parent folders resolved in the image). */
export type ImagePathStat = {
  readonly name: string
  readonly mode: number
  /** for a link, where it leads, fully resolved in the image (absolute); '' otherwise */
  readonly linkTarget: string
}

/** A look into an image's files without running anything of it (imageProbe). */
export type ImageProbe = {
  /** null: nothing there */
  stat(path: string): Promise<ImagePathStat | null>
  /** a small regular file's text, at most `maxBytes` (null: none there) */
  readFile(path: string, maxBytes: number): Promise<string | null>
}

export type RemoveResult = 'removed' | 'absent'

type DockerApiError = Error & {statusCode?: number; code?: string; json?: {message?: string}}

function dockerMessage(error: unknown): string {
  const e = error as DockerApiError
  return (e?.json?.message ?? e?.message ?? String(error)).split('\n')[0].trim()
}

function isUnreachable(error: unknown): boolean {
  const code = (error as DockerApiError)?.code
  return code === 'ECONNREFUSED' || code === 'ENOENT' || code === 'EACCES' || code === 'ETIMEDOUT' || code === 'EHOSTUNREACH'
}

/** a Docker API call cut off by its deadline (AbortSignal.timeout) */
function isTimeout(error: unknown): boolean {
  const name = (error as Error)?.name
  return name === 'TimeoutError' || name === 'AbortError'
}

function unreachable(error: unknown): ContainerError {
  const code = (error as DockerApiError)?.code
  const fix =
    code === 'EACCES'
      ? ['add yourself to the docker group (then log in again): sudo usermod -aG docker $USER']
      : ['start the Docker daemon (sudo systemctl start docker)', 'or point DOCKER_HOST at a running Docker daemon']
  return new ContainerError('DOCKER_UNREACHABLE', `cannot reach the Docker engine (${dockerMessage(error)})`, {fix, cause: error})
}

/** how long a ping may take: a healthy daemon answers in milliseconds, a busy one in a few seconds */
export const PING_TIMEOUT_MS = 10_000

/**
 * How long one create, start, inspect, list or remove may take. `up` and `down` make these calls under the GPU's
 * lock: a daemon that wedges mid-way fails the step (and its undo, which `recover` finishes later) instead of
 * holding every teammate's command on that GPU. Starting a container with the NVIDIA hook takes seconds at most.
 */
export const DOCKER_CALL_TIMEOUT_MS = 60_000

export class DockerRuntime {
  private readonly docker: Docker
  private readonly callTimeoutMs: number

  /** Uses DOCKER_HOST & co. like the docker CLI, unless given options or a client. */
  constructor(options: {docker?: Docker; dockerOptions?: Docker.DockerOptions; callTimeoutMs?: number} = {}) {
    this.docker = options.docker ?? new Docker(options.dockerOptions)
    this.callTimeoutMs = options.callTimeoutMs ?? DOCKER_CALL_TIMEOUT_MS
  }

  /** a fresh deadline for one Docker API call */
  private deadline(): {abortSignal: AbortSignal} {
    return {abortSignal: AbortSignal.timeout(this.callTimeoutMs)}
  }

  /**
   * Throws ContainerError DOCKER_UNREACHABLE when no Docker daemon answers, or none within `timeoutMs`: `up` pings while it
   * holds the GPU's lock, and a wedged daemon must not keep the team's commands on that GPU waiting.
   */
  async ping(timeoutMs = PING_TIMEOUT_MS): Promise<void> {
    const abortSignal = AbortSignal.timeout(timeoutMs)
    try {
      // dockerode forwards abortSignal to the request (its typings do not declare ping's options)
      await (this.docker.ping as (options: {abortSignal: AbortSignal}) => Promise<unknown>).call(this.docker, {abortSignal})
    } catch (error) {
      debug('ping failed: %O', error)
      if (abortSignal.aborted) {
        throw new ContainerError('DOCKER_UNREACHABLE', `the Docker engine did not answer within ${timeoutMs / 1000} s`, {
          fix: ['check the daemon: sudo systemctl status docker (restart it if it hangs)', 'or point DOCKER_HOST at a running Docker daemon'],
          cause: error,
        })
      }
      throw unreachable(error)
    }
  }

  /**
   * Builds an image, streaming the daemon's events to onProgress. dockerode resolves even when the build
   * fails, so the error events are checked here; forcerm removes the intermediate containers either way.
   */
  async buildImage(options: BuildOptions): Promise<BuildResult> {
    let stream: NodeJS.ReadableStream
    try {
      // dockerode hands tar-fs an ignore function that sees absolute paths, so with a .dockerignore in the
      // context every folder is sent empty: send the files themselves.
      const files = await listFiles(options.contextDir, options.src)
      stream = await this.docker.buildImage(
        {context: options.contextDir, src: files},
        {
          t: options.tag,
          dockerfile: options.dockerfile,
          buildargs: {...options.buildArgs},
          labels: {...options.labels},
          nocache: options.noCache ?? false,
          forcerm: true,
          rm: true,
        },
      )
    } catch (error) {
      throw this.wrap(error, 'IMAGE_BUILD_FAILED', `cannot start building ${options.tag}`)
    }
    let imageId: string | null = null
    let failure: string | null = null
    const output: BuildEvent[] = (await new Promise((resolve, reject) => {
      this.docker.modem.followProgress(
        stream,
        (error: Error | null, events: BuildEvent[]) => (error ? reject(error) : resolve(events)),
        (event: BuildEvent) => {
          if (event.aux?.ID) imageId = event.aux.ID
          if (event.error || event.errorDetail) failure ??= event.errorDetail?.message ?? event.error ?? 'unknown error'
          options.onProgress?.(event)
        },
      )
    }).catch((error) => {
      throw this.wrap(error, 'IMAGE_BUILD_FAILED', `building ${options.tag} failed`)
    })) as BuildEvent[]
    // belt and braces: some daemons only put the error in the final output
    for (const event of output) if (event.error || event.errorDetail) failure ??= event.errorDetail?.message ?? event.error ?? null
    if (failure) {
      debug('build of %s failed: %s', options.tag, failure)
      throw new ContainerError('IMAGE_BUILD_FAILED', `building ${options.tag} failed: ${failure.trim().split('\n')[0]}`, {
        fix: [
          'the default base (pytorch/pytorch:<tag>) must be pulled first: docker pull it, or work offline with gpu-cosplay build --base IMAGE (any local image with python3)',
          'a stale cached layer: gpu-cosplay build --no-cache',
        ],
      })
    }
    return {imageId, tag: options.tag}
  }

  /**
   * null when the image is not there. dockerode puts the name into the URL path as it is (`/images/<ref>/json`), so a
   * reference that is not Docker's grammar (`../containers/json`, `x?y`) is refused here (BAD_IMAGE) before the daemon
   * hears of it, and what passes goes through pathSafe: a no-op for the grammar's characters, an encoding for any other.
   */
  async inspectImage(ref: string): Promise<ImageInfo | null> {
    assertImageRef(ref)
    let info: Docker.ImageInspectInfo
    try {
      info = await this.docker.getImage(pathSafe(ref)).inspect()
    } catch (error) {
      if ((error as DockerApiError)?.statusCode === 404) return null
      throw this.wrap(error, 'IMAGE_INSPECT_FAILED', `cannot inspect image ${ref}`)
    }
    const config = info.Config ?? ({} as Docker.ImageInspectInfo['Config'])
    const labels: Record<string, string> = {...(config.Labels ?? {})}
    const isCosplayImage = labels[LABELS.image] === '1'
    const entrypoint = toArgv(config.Entrypoint)
    const cmd = toArgv(config.Cmd)
    const exposesSsh = Object.keys(config.ExposedPorts ?? {}).includes('22/tcp')
    const mentionsSshd = [...(entrypoint ?? []), ...(cmd ?? [])].some((word) => /(^|\/)sshd\b/.test(word))
    const env: Record<string, string> = {}
    for (const item of config.Env ?? []) {
      const at = item.indexOf('=')
      if (at > 0) env[item.slice(0, at)] = item.slice(at + 1)
    }
    return {
      id: info.Id,
      tags: info.RepoTags ?? [],
      sizeBytes: info.Size,
      labels,
      isCosplayImage,
      cosplayVersion: labels[LABELS.version] ?? null,
      hasSshd: isCosplayImage || exposesSsh || mentionsSshd,
      entrypoint,
      cmd,
      env,
    }
  }

  /**
   * Creates and starts a container. If start() fails, the container just created is removed before the
   * error leaves, so a failed call leaves nothing behind.
   */
  async createAndStart(spec: ContainerSpec): Promise<StartedContainer> {
    const options = containerCreateOptions(spec)
    const publish = spec.sshPort !== null
    const bindAddress = spec.sshBindAddress ?? '127.0.0.1'
    const creating = Date.now()
    let container: Docker.Container
    try {
      container = await this.docker.createContainer({...options, ...this.deadline()})
    } catch (error) {
      const code = (error as DockerApiError)?.statusCode === 409 ? 'CONTAINER_NAME_IN_USE' : 'CONTAINER_CREATE_FAILED'
      throw this.wrap(error, code, `cannot create container ${spec.name}`)
    }
    const starting = Date.now()
    try {
      await container.start(this.deadline())
    } catch (error) {
      await this.remove(container.id, {force: true}).catch((removeError) => debug('cleanup of %s failed: %O', container.id, removeError))
      if (isTimeout(error)) throw this.wrap(error, 'CONTAINER_START_FAILED', `cannot start container ${spec.name}`)
      const message = dockerMessage(error)
      const fix = /nvidia|device driver/i.test(message)
        ? ['the Docker daemon has no nvidia device driver: install nvidia-container-toolkit and restart dockerd']
        : []
      throw new ContainerError('CONTAINER_START_FAILED', `cannot start container ${spec.name}: ${message}`, {fix, cause: error})
    }
    let sshPort: number | null = null
    if (publish) {
      const info = await container.inspect(this.deadline()).catch((error: unknown) => {
        throw this.wrap(error, 'CONTAINER_INSPECT_FAILED', `cannot read the published ssh port of ${spec.name}`)
      })
      const binding = info.NetworkSettings?.Ports?.['22/tcp']?.[0]
      sshPort = binding?.HostPort ? Number(binding.HostPort) : null
    }
    debug('started %s (%s) ssh %s:%s: create %d ms, start %d ms', spec.name, container.id, bindAddress, sshPort, starting - creating, Date.now() - starting)
    return {id: container.id, name: spec.name, sshPort, sshBindAddress: publish ? bindAddress : null}
  }

  /** Runs a command in a running container; the exit code comes from exec.inspect(). */
  async exec(containerId: string, cmd: readonly string[], options: DockerExecOptions = {}): Promise<DockerExecResult> {
    const tty = options.tty ?? false
    const container = this.docker.getContainer(containerId)
    let exec: Docker.Exec
    let stream: NodeJS.ReadWriteStream
    try {
      exec = await container.exec({
        Cmd: [...cmd],
        AttachStdin: Boolean(options.stdin),
        AttachStdout: true,
        AttachStderr: true,
        Tty: tty,
        ...(options.user ? {User: options.user} : {}),
        ...(options.workingDir ? {WorkingDir: options.workingDir} : {}),
        ...(options.env ? {Env: Object.entries(options.env).map(([k, v]) => `${k}=${v}`)} : {}),
      })
      stream = (await exec.start({hijack: true, stdin: Boolean(options.stdin), Tty: tty})) as NodeJS.ReadWriteStream
    } catch (error) {
      const code = (error as DockerApiError)?.statusCode === 404 ? 'CONTAINER_NOT_FOUND' : 'CONTAINER_EXEC_FAILED'
      throw this.wrap(error, code, `cannot run ${cmd[0]} in container ${containerId.slice(0, 12)}`)
    }
    const collected = {stdout: [] as Buffer[], stderr: [] as Buffer[]}
    const out = options.stdout ?? collector(collected.stdout)
    const err = options.stderr ?? collector(collected.stderr)
    const ended = new Promise<void>((resolve, reject) => {
      stream.on('end', resolve)
      stream.on('close', resolve)
      stream.on('error', reject)
    })
    if (tty) stream.on('data', (chunk: Buffer) => out.write(chunk))
    else this.docker.modem.demuxStream(stream, out, err)
    // @types/dockerode types the hijacked exec stream as a Readable; it is a duplex socket, and stdin goes into it.
    const input = stream as unknown as Writable
    if (options.stdin) options.stdin.pipe(input)
    const resize = async (rows: number, cols: number) => {
      if (tty) await exec.resize({h: rows, w: cols}).catch((error: unknown) => debug('resize failed: %O', error))
    }
    if (options.size) await resize(options.size.rows, options.size.cols)
    options.onStart?.({resize})
    await (options.timeoutMs === undefined ? ended : endedWithin(ended, stream, options.timeoutMs, cmd[0], containerId))
    if (options.stdin) options.stdin.unpipe(input)
    let exitCode: number | null = null
    for (let attempt = 0; attempt < 50; attempt++) {
      const info = await exec.inspect()
      if (!info.Running) {
        exitCode = info.ExitCode ?? null
        break
      }
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    return {
      exitCode: exitCode ?? -1,
      stdout: Buffer.concat(collected.stdout).toString('utf8'),
      stderr: Buffer.concat(collected.stderr).toString('utf8'),
    }
  }

  /**
   * Looks into an image through a container of it that is created and never started: nothing mounted, no network,
   * labelled as a probe, removed whatever happens.
   */
  async imageProbe<T>(imageId: string, look: (probe: ImageProbe) => Promise<T>): Promise<T> {
    let container: Docker.Container
    try {
      container = await this.docker.createContainer({
        Image: imageId,
        Labels: {[LABELS.probe]: '1'},
        NetworkDisabled: true,
        HostConfig: {NetworkMode: 'none'},
        ...this.deadline(),
      })
    } catch (error) {
      throw this.wrap(error, 'CONTAINER_CREATE_FAILED', `cannot look into image ${imageId.slice(0, 19)}`)
    }
    const probe: ImageProbe = {
      stat: async (path) => {
        try {
          const res = (await container.infoArchive({path, ...this.deadline()})) as unknown as {headers: Record<string, string | undefined>; resume?: () => void}
          res.resume?.()
          const header = res.headers['x-docker-container-path-stat']
          if (!header) return null
          const stat = JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as {name?: string; mode?: number; linkTarget?: string}
          return {name: stat.name ?? '', mode: stat.mode ?? 0, linkTarget: stat.linkTarget ?? ''}
        } catch (error) {
          if ((error as DockerApiError)?.statusCode === 404) return null
          throw this.wrap(error, 'IMAGE_INSPECT_FAILED', `cannot look at ${path} in image ${imageId.slice(0, 19)}`)
        }
      },
      readFile: async (path, maxBytes) => {
        let stream: NodeJS.ReadableStream
        try {
          stream = await container.getArchive({path, ...this.deadline()})
        } catch (error) {
          if ((error as DockerApiError)?.statusCode === 404) return null
          throw this.wrap(error, 'IMAGE_INSPECT_FAILED', `cannot read ${path} in image ${imageId.slice(0, 19)}`)
        }
        return firstFileOfTar(stream, maxBytes)
      },
    }
    try {
      return await look(probe)
    } finally {
      await this.remove(container.id, {force: true}).catch((error: unknown) => debug('removing probe %s failed: %O', container.id, error))
    }
  }

  /** Containers (also stopped ones) carrying every given label; a value of true matches any value. */
  async listByLabel(labels: Readonly<Record<string, string | true>>): Promise<ContainerSummary[]> {
    const filters = {label: Object.entries(labels).map(([key, value]) => (value === true ? key : `${key}=${value}`))}
    let items: Docker.ContainerInfo[]
    try {
      items = await this.docker.listContainers({all: true, filters, ...this.deadline()})
    } catch (error) {
      throw this.wrap(error, 'CONTAINER_LIST_FAILED', 'cannot list containers')
    }
    return items.map((item) => {
      const ssh = item.Ports?.find((port) => port.PrivatePort === 22 && port.PublicPort)
      return {
        id: item.Id,
        name: (item.Names?.[0] ?? '').replace(/^\//, ''),
        image: item.Image,
        state: item.State,
        status: item.Status,
        labels: {...item.Labels},
        sshPort: ssh?.PublicPort ?? null,
      }
    })
  }

  /** Removes a container (with its anonymous volumes). A container that is already gone is not an error. */
  async remove(containerId: string, options: {force?: boolean} = {}): Promise<RemoveResult> {
    try {
      await this.docker.getContainer(containerId).remove({force: options.force ?? true, v: true, ...this.deadline()})
      return 'removed'
    } catch (error) {
      const status = (error as DockerApiError)?.statusCode
      // 404: gone; 409 "removal already in progress": someone else is removing it
      if (status === 404 || (status === 409 && /already in progress/i.test(dockerMessage(error)))) return 'absent'
      throw this.wrap(error, 'CONTAINER_REMOVE_FAILED', `cannot remove container ${containerId.slice(0, 12)}`)
    }
  }

  private wrap(error: unknown, code: string, what: string): ContainerError {
    if (isUnreachable(error)) return unreachable(error)
    if (isTimeout(error)) {
      return new ContainerError(code, `${what}: the Docker engine did not answer within ${this.callTimeoutMs / 1000} s`, {
        fix: ['check the daemon: sudo systemctl status docker (restart it if it hangs)', 'then: gpu-cosplay recover'],
        cause: error,
      })
    }
    debug('%s: %O', what, error)
    return new ContainerError(code, `${what}: ${dockerMessage(error)}`, {cause: error})
  }
}

/** What `docker create` gets for a spec: the Docker API's shape, without the call (unit-tested as data). */
export function containerCreateOptions(spec: ContainerSpec): Docker.ContainerCreateOptions {
  const env: Record<string, string> = {...spec.env}
  // A device request sets NVIDIA_VISIBLE_DEVICES for PID 1 only; in Config.Env `docker exec` sees it too.
  if (spec.deviceIds && spec.deviceIds.length > 0 && env.NVIDIA_VISIBLE_DEVICES === undefined) {
    env.NVIDIA_VISIBLE_DEVICES = spec.deviceIds.join(',')
  }
  const publish = spec.sshPort !== null
  const bindAddress = spec.sshBindAddress ?? '127.0.0.1'
  return {
    name: spec.name,
    Image: spec.image,
    Labels: {...spec.labels},
    Env: Object.entries(env).map(([key, value]) => `${key}=${value}`),
    ...(spec.user ? {User: spec.user} : {}),
    ...(spec.entrypoint ? {Entrypoint: [...spec.entrypoint]} : {}),
    ...(spec.cmd ? {Cmd: [...spec.cmd]} : {}),
    ...(publish ? {ExposedPorts: {'22/tcp': {}}} : {}),
    HostConfig: {
      ...(publish ? {PortBindings: {'22/tcp': [{HostIp: bindAddress, HostPort: spec.sshPort ? String(spec.sshPort) : ''}]}} : {}),
      Binds: [...(spec.binds ?? [])],
      ...(spec.shmSizeBytes ? {ShmSize: spec.shmSizeBytes} : {}),
      ...(spec.memoryBytes ? {Memory: spec.memoryBytes, MemorySwap: spec.memoryBytes} : {}),
      ...(spec.pidsLimit ? {PidsLimit: spec.pidsLimit} : {}),
      ...(spec.init ? {Init: true} : {}),
      ...(spec.capDrop ? {CapDrop: [...spec.capDrop]} : {}),
      ...(spec.capAdd ? {CapAdd: [...spec.capAdd]} : {}),
      ...(spec.noNewPrivileges ? {SecurityOpt: ['no-new-privileges:true']} : {}),
      // No Count together with DeviceIDs: the daemon accepts it at create and fails at start.
      ...(spec.deviceIds && spec.deviceIds.length > 0
        ? {DeviceRequests: [{Driver: 'nvidia', DeviceIDs: [...spec.deviceIds], Capabilities: [['gpu', 'compute', 'utility']]}]}
        : {}),
    },
  }
}

/** Files under the given entries of dir, relative to dir, without Python caches. */
async function listFiles(dir: string, entries: readonly string[]): Promise<string[]> {
  const files: string[] = []
  for (const entry of entries) {
    let children
    try {
      children = await readdir(join(dir, entry), {withFileTypes: true})
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOTDIR') {
        files.push(entry)
        continue
      }
      throw error
    }
    for (const child of children) {
      if (child.name === '__pycache__' || child.name.endsWith('.pyc')) continue
      const path = `${entry}/${child.name}`
      if (child.isDirectory()) files.push(...(await listFiles(dir, [path])))
      else files.push(path)
    }
  }
  return files.sort()
}

/** Every character outside an image reference's own (letters, digits, `._-:@/+`) percent-encoded, for a URL path. */
function pathSafe(ref: string): string {
  return ref.replace(/[^A-Za-z0-9._\-:@/+]/g, (c) => encodeURIComponent(c).replace(/[!'()*]/g, (x) => `%${x.charCodeAt(0).toString(16).toUpperCase()}`))
}

/**
 * The content of the first entry of a tar stream when it is a regular file, at most `maxBytes` of it; null otherwise.
 * (A ustar header is 512 bytes: the size in octal at 124, the type at 156.)
 */
async function firstFileOfTar(stream: NodeJS.ReadableStream, maxBytes: number): Promise<string | null> {
  const chunks: Buffer[] = []
  let length = 0
  const limit = 512 + maxBytes
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    chunks.push(chunk)
    length += chunk.length
    if (length >= limit) break
  }
  ;(stream as unknown as {destroy?: () => void}).destroy?.()
  const tar = Buffer.concat(chunks)
  if (tar.length < 512) return null
  const type = String.fromCharCode(tar[156])
  if (type !== '0' && type !== '\0') return null
  const size = Number.parseInt(tar.subarray(124, 136).toString('ascii').replace(/\0.*$/, '').trim(), 8)
  if (!Number.isFinite(size)) return null
  return tar.subarray(512, 512 + Math.min(size, maxBytes)).toString('utf8')
}

function toArgv(value: unknown): string[] | null {
  if (Array.isArray(value)) return value.map(String)
  if (typeof value === 'string' && value) return [value]
  return null
}

/**
 * How much of a command's output exec collects, per stream. What root runs in a member's container (the reaper's
 * notice and login checks, verify) prints what the member's files make it print: past this, output is read and
 * dropped, so the command still ends and root's memory holds no more than this. Every collected answer is far smaller.
 */
export const EXEC_KEEP_BYTES = 64 * 1024

function collector(chunks: Buffer[]): Writable {
  const stream = new PassThrough()
  let kept = 0
  stream.on('data', (chunk: Buffer) => {
    if (kept >= EXEC_KEEP_BYTES) return
    // a copy of the part kept, so that a large last chunk is not held whole
    const part = chunk.length <= EXEC_KEEP_BYTES - kept ? chunk : Buffer.from(chunk.subarray(0, EXEC_KEEP_BYTES - kept))
    chunks.push(part)
    kept += part.length
  })
  return stream
}

/** `ended`, or CONTAINER_EXEC_TIMEOUT after `ms` (the exec's stream is closed then, so nothing waits on it). */
async function endedWithin(ended: Promise<void>, stream: NodeJS.ReadWriteStream, ms: number, what: string, containerId: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      ;(stream as unknown as {destroy(): void}).destroy()
      reject(new ContainerError('CONTAINER_EXEC_TIMEOUT', `${what} in container ${containerId.slice(0, 12)} did not end within ${ms} ms`, {exit: 5}))
    }, ms)
  })
  try {
    await Promise.race([ended, late])
  } finally {
    clearTimeout(timer)
  }
}
