/**
 * Who may write the state directory, and so whose files in it are trusted. In the engine (an installed box) root
 * alone writes it: folders are root's 0755, files 0644 (secrets 0600), and a book or claim of any other owner is
 * refused. Elsewhere (the team's un-installed shared folder, a user's own) the folders the team shares are 0777, any
 * teammate's files are read, and those files are 0666 where their folder is world-writable (sharedFileMode).
 * A process's policy is its call context's (core/call-context.ts); nothing here knows which process this is.
 */
export type StatePolicy = {
  readonly engine: boolean
  /** mode of gpus/, sessions/, calibrations/ */
  readonly sharedFolderMode: number
  /** the only owner whose files in gpus/, sessions/ and calibrations/ are read; null: anyone's */
  readonly trustedOwner: number | null
}

/** The engine's: root alone writes the state directory, and only root's files in it are read. */
export const ENGINE_STATE_POLICY: StatePolicy = Object.freeze({engine: true, sharedFolderMode: 0o755, trustedOwner: 0})
/** Everyone else's (a sandbox, a team's shared folder, root without an installation): anyone's files are read. */
export const SHARED_STATE_POLICY: StatePolicy = Object.freeze({engine: false, sharedFolderMode: 0o777, trustedOwner: null})

export function statePolicyOf(engine: boolean): StatePolicy {
  return engine ? ENGINE_STATE_POLICY : SHARED_STATE_POLICY
}
