import {isEngine} from './box-config.js'

/**
 * Who may write the state directory, and so whose files in it are trusted. In the engine (an installed box) root
 * alone writes it: folders are root's 0755, files 0644 (secrets 0600), and a book or claim of any other owner is
 * refused. Elsewhere (the team's un-installed shared folder, a user's own) the folders the team shares are 0777, any
 * teammate's files are read, and those files are 0666 where their folder is world-writable (sharedFileMode).
 */
export type StatePolicy = {
  readonly engine: boolean
  /** mode of gpus/, sessions/, calibrations/ */
  readonly sharedFolderMode: number
  /** the only owner whose files in gpus/, sessions/ and calibrations/ are read; null: anyone's */
  readonly trustedOwner: number | null
}

export function statePolicy(): StatePolicy {
  const engine = isEngine()
  return {engine, sharedFolderMode: engine ? 0o755 : 0o777, trustedOwner: engine ? 0 : null}
}
