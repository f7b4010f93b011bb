/**
 * How a use case shows slow work while it runs (style: a spinner on stderr) without printing anything itself: the
 * command hands in oclif's `ux.action`, or null under --json.
 */
export type Spinner = {
  start(action: string): void
  /** how it ended: "done", "failed", a time... */
  stop(outcome: string): void
}
