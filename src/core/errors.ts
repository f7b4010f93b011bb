/**
 * One error family for the whole tool. Layers throw these; only BaseCommand turns them into output.
 * `exit` groups failures by who can fix them: 2 bad input, 3 host/GPU state, 4 permission, 5 Docker/ssh; 1 is a
 * check that failed (verify: the session cannot do what it was set up for).
 */
export type ExitCode = 1 | 2 | 3 | 4 | 5

export type ErrorOptions = {
  fix?: string[]
  cause?: unknown
}

export class CosplayError extends Error {
  readonly code: string
  readonly exit: ExitCode
  readonly fix: string[]

  constructor(code: string, message: string, exit: ExitCode, options: ErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : {cause: options.cause})
    this.name = new.target.name
    this.code = code
    this.exit = exit
    this.fix = options.fix ?? []
  }
}

/** The user typed something we cannot act on. */
export class InputError extends CosplayError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, 2, options)
  }
}

/** A catalog file (built-in or user-supplied) is malformed. */
export class CatalogError extends CosplayError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, 2, options)
  }
}

/** nvidia-smi is missing, failed, refused, or printed something we cannot read. */
export class HostError extends CosplayError {
  constructor(code: string, message: string, options: ErrorOptions & {exit?: ExitCode} = {}) {
    super(code, message, options.exit ?? 3, options)
  }
}

/** The tool's own records (journal, leases, sessions) disagree with what is asked or are unreadable. */
export class StateError extends CosplayError {
  constructor(code: string, message: string, options: ErrorOptions & {exit?: ExitCode} = {}) {
    super(code, message, options.exit ?? 3, options)
  }
}

/** Docker or ssh failed (exit 5), or the container asked for is not allowed here (exit 4). */
export class ContainerError extends CosplayError {
  constructor(code: string, message: string, options: ErrorOptions & {exit?: ExitCode} = {}) {
    super(code, message, options.exit ?? 5, options)
  }
}

export function isCosplayError(error: unknown): error is CosplayError {
  return error instanceof CosplayError
}

type Noted = Error & {notes?: unknown}

/**
 * Adds notes to an error on its way out (what a layer left behind while failing, e.g. "could not undo everything;
 * run gpu-cosplay recover"). The error printer shows them with the error.
 */
export function addErrorNotes(error: unknown, notes: readonly string[]): void {
  if (!(error instanceof Error) || notes.length === 0) return
  ;(error as Noted).notes = [...errorNotes(error), ...notes]
}

/** The notes a layer added to this error (none for most). */
export function errorNotes(error: unknown): string[] {
  const notes = error instanceof Error ? (error as Noted).notes : undefined
  return Array.isArray(notes) ? notes.filter((note): note is string => typeof note === 'string') : []
}
