/**
 * The engine's whole surface is the request schema: what it refuses before anything runs, for bytes a member hands it
 * directly (`sudo -n ENGINE`, any argv, any stdin), not only what the CLI sends.
 */
import {parseRequest, refuseToServe} from '../../../src/engine/request-gate.js'
import {requestLine} from '../../../src/system/engine-protocol.js'

const throughSudo = {GPU_COSPLAY_ENGINE: 'caller', SUDO_UID: '1301', SUDO_GID: '1301', SUDO_USER: 'alice'}

const up = {
  v: 1,
  op: 'up',
  target: '3090',
  hostGpu: 0,
  match: 'balanced',
  basis: 'measured',
  name: null,
  strict: false,
  noMps: false,
  lockClock: false,
  capPower: false,
  ttlMs: null,
  wait: false,
  timeoutMs: null,
  container: {
    image: null,
    workspace: '/home/alice/ws',
    volumes: [{source: '/home/alice/data', target: '/data', readOnly: true}],
    env: [{name: 'HF_HOME', value: '/data/hf\nwith a newline and $(id)'}],
    sshPort: null,
    sshBind: '127.0.0.1',
    shmSizeBytes: 1024 ** 3,
    sudo: false,
    publicKeys: ['ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIB0 alice@laptop'],
  },
}

const code = (frame: ReturnType<typeof parseRequest>) => ('t' in frame ? {code: frame.error.code, exit: frame.error.exit} : {op: frame.op})

describe('who may be served', () => {
  it('only root started through the entry point, for a caller sudo names', () => {
    expect(refuseToServe([], throughSudo, 0)).toBeNull()
    expect(refuseToServe([], throughSudo, 1301)?.error).toMatchObject({code: 'NOT_THROUGH_SUDO', exit: 4})
    expect(refuseToServe([], {...throughSudo, GPU_COSPLAY_ENGINE: 'root'}, 0)?.error).toMatchObject({code: 'NOT_THROUGH_SUDO', exit: 4})
    expect(refuseToServe([], {...throughSudo, SUDO_UID: ''}, 0)?.error).toMatchObject({code: 'NOT_THROUGH_SUDO', exit: 4})
    // sudo names the caller by name too; without it the caller would fall back to the process (root)
    for (const SUDO_USER of ['', undefined]) expect(refuseToServe([], {...throughSudo, SUDO_USER}, 0)?.error).toMatchObject({code: 'NOT_THROUGH_SUDO', exit: 4})
  })

  it.each([[['system', 'install', '--allow-container-sudo', '--yes']], [['plan', 't4', '--out', '/etc/x']], [['--help']], [['']]])(
    'any argument is refused: %j',
    (argv) => {
      expect(refuseToServe(argv, throughSudo, 0)?.error).toMatchObject({code: 'ENGINE_ARGV', exit: 2})
    },
  )
})

describe('the request', () => {
  it('the CLI’s own requests parse as they are sent', () => {
    const {v, ...body} = up
    expect(v).toBe(1)
    expect(code(parseRequest(requestLine(body as never).trim()))).toEqual({op: 'up'})
    expect(code(parseRequest(JSON.stringify({v: 1, op: 'status', orphans: true})))).toEqual({op: 'status'})
    expect(code(parseRequest(JSON.stringify({v: 1, op: 'exec', name: null, argv: ['id'], tty: false, rows: null, cols: null})))).toEqual({op: 'exec'})
  })

  const withContainer = (change: Record<string, unknown>) => JSON.stringify({...up, container: {...up.container, ...change}})
  it.each([
    ['nothing', null],
    ['not JSON', 'system install --yes'],
    ['an array', '[]'],
    ['no version', JSON.stringify({op: 'hello'})],
    ['another version', JSON.stringify({v: 2, op: 'hello'})],
    ['an operation the engine does not serve', JSON.stringify({v: 1, op: 'system-install', allowContainerSudo: true})],
    ['reset', JSON.stringify({v: 1, op: 'reset', hostGpu: 0})],
    ['build', JSON.stringify({v: 1, op: 'build'})],
    ['lease hold', JSON.stringify({v: 1, op: 'lease-hold', holder: 'x'})],
    ['an argv in disguise', JSON.stringify({v: 1, op: 'hello', argv: ['system', 'install']})],
    ['an unknown field', JSON.stringify({...up, out: '/etc/ld.so.preload'})],
    ['a state directory of its own', JSON.stringify({...up, stateDir: '/tmp/x'})],
    ['a relative workspace', withContainer({workspace: 'ws'})],
    ['a workspace with ..', withContainer({workspace: '/home/alice/../bob'})],
    ['a path with a newline', withContainer({workspace: '/home/alice/w\ns'})],
    ['an env name that is not one', withContainer({env: [{name: 'A B', value: 'x'}]})],
    ['a value too long', withContainer({env: [{name: 'A', value: 'x'.repeat(70_000)}]})],
    ['too many variables', withContainer({env: Array.from({length: 300}, (_, i) => ({name: `A${i}`, value: ''}))})],
    ['a port out of range', withContainer({sshPort: 70_000})],
    ['a key that is not one', withContainer({publicKeys: ['ssh-ed25519 AAAA\ncommand="sh" ssh-rsa AAAA']})],
    ['a session name with a slash', JSON.stringify({...up, name: '../x'})],
    ['a GPU index out of range', JSON.stringify({...up, hostGpu: -1})],
    ['a TTL that overflows', JSON.stringify({...up, ttlMs: 1e300})],
    ['a TTL of a fraction of a ms', JSON.stringify({...up, ttlMs: 0.5})],
    ['an objective that is not one', JSON.stringify({...up, match: 'everything'})],
  ])('refuses %s (exit 2)', (_what, line) => {
    expect(code(parseRequest(line))).toEqual({code: 'BAD_REQUEST', exit: 2})
  })

  it('names the field, never echoes a value (it may be a secret)', () => {
    const frame = parseRequest(withContainer({env: [{name: 'TOKEN', value: 's3cret'.repeat(20_000)}]}))
    expect('t' in frame && frame.error.message).toMatch(/container\.env\.0\.value/)
    expect(JSON.stringify(frame)).not.toContain('s3cret')
  })
})
