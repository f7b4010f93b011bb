import {parseHostUrl} from '../../../src/remote/host-url.js'
import {parseHostsFile} from '../../../src/remote/hosts-file.js'
import {resolveHosts} from '../../../src/remote/resolve-hosts.js'
import {sshConfigFor} from '../../../src/remote/ssh-config-file.js'
import {endpointFor} from '../../../src/remote/ssh-transport.js'
import {thrown} from '../support/thrown.js'

describe('parseHostUrl', () => {
  it.each([
    ['ssh://alice@box', {host: 'box', user: 'alice', port: null}],
    ['ssh://alice@box:2222', {host: 'box', user: 'alice', port: 2222}],
    ['ssh://box', {host: 'box', user: null, port: null}],
    ['ssh://tester@127.0.0.1:40022/', {host: '127.0.0.1', user: 'tester', port: 40022}],
    ['ssh://bob@[fe80::1]:22', {host: 'fe80::1', user: 'bob', port: 22}],
  ])('%s', (url, expected) => {
    expect(parseHostUrl(url)).toEqual({label: url, ...expected})
  })

  it.each(['http://box', 'ssh://', 'ssh://a@b:0', 'ssh://a@b:70000', 'ssh://a@b:x', 'ssh://a b', 'ssh://a@b/path'])(
    'refuses %j with BAD_HOST, exit 2',
    (url) => {
      const error = thrown(() => parseHostUrl(url))
      expect([error.code, error.exit]).toEqual(['BAD_HOST', 2])
    },
  )
})

describe('hosts.yaml', () => {
  const good = 'version: 1\nhosts:\n  lab: {url: "ssh://alice@lab-gpu:2222"}\n  spare: {url: "ssh://spare", description: second box}\n'

  it('reads named hosts', () => {
    expect(parseHostsFile(good, 'hosts.yaml').hosts.lab.url).toBe('ssh://alice@lab-gpu:2222')
  })

  it.each([
    ['missing version', 'hosts: {}\n'],
    ['version 2', 'version: 2\nhosts: {}\n'],
    ['unknown top-level key', 'version: 1\nhosts: {}\nextra: 1\n'],
    ['unknown host key', 'version: 1\nhosts:\n  lab: {url: "ssh://a@b", port: 22}\n'],
    ['host without url', 'version: 1\nhosts:\n  lab: {}\n'],
    ['bad url', 'version: 1\nhosts:\n  lab: {url: "http://b"}\n'],
    ['bad name', 'version: 1\nhosts:\n  "a b": {url: "ssh://b"}\n'],
    ['not YAML', 'version: 1\nhosts: [\n'],
    ['a host named all (reserved for --host all)', 'version: 1\nhosts:\n  all: {url: "ssh://b"}\n'],
  ])('refuses %s with BAD_HOSTS_FILE, exit 2, in one line naming the file', (_label, text) => {
    const error = thrown(() => parseHostsFile(text, '/cfg/hosts.yaml'))
    expect([error.code, error.exit]).toEqual(['BAD_HOSTS_FILE', 2])
    expect(error.message).toContain('/cfg/hosts.yaml')
    expect(error.message).not.toContain('\n')
  })

  it('resolves a list of URLs, user@host, named hosts and ssh_config aliases', () => {
    const file = parseHostsFile(good, 'hosts.yaml')
    expect(resolveHosts('lab, ssh://b:2, carol@c, gpu-alias', () => file)).toEqual([
      {label: 'lab', host: 'lab-gpu', user: 'alice', port: 2222},
      {label: 'ssh://b:2', host: 'b', user: null, port: 2},
      {label: 'carol@c', host: 'c', user: 'carol', port: null},
      {label: 'gpu-alias', host: 'gpu-alias', user: null, port: null},
    ])
  })

  it('reads hosts.yaml only when a bare name needs it', () => {
    expect(
      resolveHosts('ssh://a@b', () => {
        throw new Error('read')
      }),
    ).toHaveLength(1)
  })

  it("takes all as every named host, in the file's order", () => {
    const file = parseHostsFile(good, 'hosts.yaml')
    expect(resolveHosts('all', () => file).map((h) => [h.label, h.host])).toEqual([
      ['lab', 'lab-gpu'],
      ['spare', 'spare'],
    ])
  })

  it('refuses all when hosts.yaml names no host (BAD_HOST, exit 2)', () => {
    const error = thrown(() => resolveHosts('all', () => ({version: 1, hosts: {}})))
    expect([error.code, error.exit]).toEqual(['BAD_HOST', 2])
  })

  it('refuses an empty list', () => {
    expect(thrown(() => resolveHosts(' , ', () => ({version: 1, hosts: {}}))).code).toBe('BAD_HOST')
  })
})

describe('~/.ssh/config', () => {
  const config = `
# lab boxes
Host gpu gpu-*
  HostName lab-gpu-3.example.org
  User alice
  Port 2222
  IdentityFile ~/.ssh/lab_ed25519

Host gpu-old
  # never reached for HostName: the first value wins
  HostName old.example.org
  IdentityFile=~/.ssh/old

Host behind
  HostName 10.0.0.7
  ProxyJump jumper@bastion:2200

Match host *.internal
  User nobody

Host * !gpu
  User everyone
  UserKnownHostsFile ~/.ssh/kh_all
`

  it('takes the first value of each keyword, accumulating IdentityFile', () => {
    expect(sshConfigFor(config, 'gpu-old', '/home/a')).toEqual({
      hostName: 'lab-gpu-3.example.org',
      user: 'alice',
      port: 2222,
      identityFiles: ['/home/a/.ssh/lab_ed25519', '/home/a/.ssh/old'],
      proxyJump: null,
      userKnownHostsFiles: ['/home/a/.ssh/kh_all'],
    })
  })

  it('honours negated patterns and ignores Match blocks', () => {
    const gpu = sshConfigFor(config, 'gpu', '/home/a')
    expect(gpu.userKnownHostsFiles).toEqual([])
    expect(sshConfigFor(config, 'x.internal', '/h').user).toBe('everyone')
  })

  it("the URL's user and port beat the file; HostName is where known_hosts is checked", () => {
    const endpoint = endpointFor({label: 'gpu', host: 'gpu', user: 'root', port: 22}, {env: {}, home: '/home/a', sshConfigText: config})
    expect(endpoint).toMatchObject({host: 'lab-gpu-3.example.org', user: 'root', port: 22, identityFiles: ['/home/a/.ssh/lab_ed25519'], jump: null})
  })

  it('follows one ProxyJump hop', () => {
    const endpoint = endpointFor({label: 'behind', host: 'behind', user: null, port: null}, {env: {USER: 'me'}, home: '/h', sshConfigText: config})
    expect(endpoint).toMatchObject({host: '10.0.0.7', port: 22, user: 'everyone', jump: {host: 'bastion', port: 2200, user: 'jumper'}})
  })

  it.each([
    ['jumper@[fe80::1]:2200', {host: 'fe80::1', port: 2200, user: 'jumper'}],
    ['ssh://[2001:db8::7]', {host: '2001:db8::7', port: 22, user: 'me'}],
  ])('follows a ProxyJump of %s (the form proxyJumpFor writes for an IPv6 box)', (proxyJump, jump) => {
    const endpoint = endpointFor(
      {label: 'x', host: 'x', user: null, port: null},
      {env: {USER: 'me'}, home: '/h', sshConfigText: `Host x\n  ProxyJump ${proxyJump}\n`},
    )
    expect(endpoint.jump).toMatchObject({label: proxyJump, ...jump})
  })

  it('refuses a ProxyJump that is not [user@]host[:port] with REMOTE_PROXY_JUMP, exit 2', () => {
    const error = thrown(() =>
      endpointFor({label: 'x', host: 'x', user: null, port: null}, {env: {}, home: '/h', sshConfigText: 'Host x\n  ProxyJump a@b:x\n'}),
    )
    expect([error.code, error.exit]).toEqual(['REMOTE_PROXY_JUMP', 2])
  })

  it('refuses a chain of jumps in one clear error', () => {
    const error = thrown(() => endpointFor({label: 'x', host: 'x', user: null, port: null}, {env: {}, home: '/h', sshConfigText: 'Host x\n  ProxyJump a,b\n'}))
    expect([error.code, error.exit]).toEqual(['REMOTE_PROXY_JUMP', 2])
  })
})
