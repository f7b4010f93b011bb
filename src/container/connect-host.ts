/** Where to connect to a published sshd: its bind address, or loopback for a wildcard bind. */
export function connectHost(bind: string | null): string {
  if (!bind || bind === '0.0.0.0' || bind === '::' || bind === '[::]') return '127.0.0.1'
  return bind
}
