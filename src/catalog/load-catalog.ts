import fs from 'node:fs'
import path from 'node:path'

import createDebug from 'debug'
import {load, YAMLException} from 'js-yaml'
import type * as z from 'zod'

import {CatalogError} from '../core/errors.js'
import {DEBUG_NS} from '../core/names.js'
import {fitAchievedModel} from './achieved-model.js'
import {findAliasClashes} from './catalog-index.js'
import {catalogFileSchema, type CatalogFile} from './schema.js'
import {withReferences} from './target-reference.js'
import type {Catalog, HostModel, Target} from './types.js'

// Commands find everything about loading in one module.
export {userCatalogDirs} from './user-catalog-dirs.js'

const debug = createDebug(DEBUG_NS.catalog)
const CATALOG_FILE = /\.ya?ml$/

export type LoadCatalogOptions = {
  /** the package's catalog/ folder */
  builtinDir: string
  /** user folders, later ones winning; missing folders are skipped */
  userDirs: string[]
}

/** Built-in catalog plus user files. A user entry whose key exists replaces the built-in one whole. */
export function loadCatalog(options: LoadCatalogOptions): Catalog {
  const builtinFiles = catalogFilesIn(options.builtinDir)
  if (builtinFiles === null || builtinFiles.length === 0) {
    throw new CatalogError('CATALOG_MISSING', `built-in catalog not found in ${options.builtinDir}`, {
      fix: ['reinstall gpu-cosplay; the package ships catalog/gpus.yaml and catalog/hosts.yaml'],
    })
  }
  const targets = new Layered<Target>('target')
  const hosts = new Layered<HostModel>('host')
  const files: string[] = []
  for (const file of builtinFiles) {
    addFile(file, readCatalogFile(file), targets, hosts, false)
    files.push(file)
  }
  for (const dir of options.userDirs) {
    const userFiles = catalogFilesIn(dir)
    if (userFiles === null) {
      debug('no user catalog at %s', dir)
      continue
    }
    for (const file of userFiles) {
      addFile(file, readCatalogFile(file), targets, hosts, true)
      files.push(file)
    }
  }
  const catalog = {targets: targets.values(), hosts: hosts.values(), files}
  rejectAliasClashes(catalog.targets, 'target', targets)
  rejectAliasClashes(catalog.hosts, 'host', hosts)
  rejectUnknownCards(catalog, hosts)
  debug('catalog: %d targets, %d hosts from %d files', catalog.targets.length, catalog.hosts.length, files.length)
  // what each card really does (measured, else estimated by the model fitted on the measured ones), derived once here
  return withReferences(catalog, fitAchievedModel(catalog.targets))
}

/** A host's `measuredAs` must name a target: a typo would silently plan on estimates. */
function rejectUnknownCards(catalog: Catalog, layered: Layered<HostModel>): void {
  const keys = new Set(catalog.targets.map((t) => t.key))
  const host = catalog.hosts.find((h) => h.measuredAs !== undefined && !keys.has(h.measuredAs))
  if (!host) return
  throw new CatalogError('CATALOG_INVALID', `${layered.fileOf(host.key)}: host "${host.key}" field "measuredAs": no target "${host.measuredAs}"`, {
    fix: ['name the key of the target entry that is the same card (gpu-cosplay ls lists them)'],
  })
}

/** Parses and validates one file's text; `fileName` is only used in messages. */
export function parseCatalogText(text: string, fileName: string): CatalogFile {
  let raw: unknown
  try {
    raw = load(text, {filename: fileName})
  } catch (error) {
    throw yamlError(error, fileName)
  }
  const result = catalogFileSchema.safeParse(raw)
  if (!result.success) throw schemaError(result.error, raw, fileName)
  return result.data
}

function readCatalogFile(file: string): CatalogFile {
  let text: string
  try {
    text = fs.readFileSync(file, 'utf8')
  } catch (error) {
    throw new CatalogError('CATALOG_INVALID', `${file}: cannot read (${(error as NodeJS.ErrnoException).code ?? 'error'})`, {cause: error})
  }
  return parseCatalogText(text, file)
}

/** Sorted catalog files in `dir`, or null when the folder does not exist. */
function catalogFilesIn(dir: string): string[] | null {
  let names: string[]
  try {
    names = fs.readdirSync(dir)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null
    throw new CatalogError('CATALOG_INVALID', `${dir}: cannot list catalog folder`, {cause: error})
  }
  return names
    .filter((name) => CATALOG_FILE.test(name))
    .sort()
    .map((name) => path.join(dir, name))
}

/** Entries by key, remembering which file each came from and whether it may still be overridden. */
class Layered<T extends {readonly key: string}> {
  private readonly entries = new Map<string, {value: T; file: string; isUser: boolean}>()
  constructor(readonly kind: 'target' | 'host') {}

  add(value: T, file: string, isUser: boolean): void {
    const previous = this.entries.get(value.key)
    // Overriding a built-in is the point of catalog.d; two user files (or two built-ins) fighting is a mistake.
    if (previous && previous.isUser === isUser) {
      throw new CatalogError('CATALOG_INVALID', `${file}: ${this.kind} "${value.key}" is already defined in ${previous.file}`, {
        fix: ['keep one definition of each key'],
      })
    }
    if (previous) debug('%s overrides %s "%s" from %s', file, this.kind, value.key, previous.file)
    this.entries.set(value.key, {value, file, isUser})
  }

  fileOf(key: string): string {
    return this.entries.get(key)?.file ?? '?'
  }

  values(): T[] {
    return [...this.entries.values()].map((entry) => entry.value)
  }
}

function addFile(file: string, data: CatalogFile, targets: Layered<Target>, hosts: Layered<HostModel>, isUser: boolean): void {
  // a derived reference in a file (an entry copied from `info --json`) is dropped: loadCatalog derives it again
  for (const {reference: _derived, ...target} of data.targets ?? []) targets.add(target, file, isUser)
  for (const host of data.hosts ?? []) hosts.add(host, file, isUser)
}

function rejectAliasClashes(entries: readonly (Target | HostModel)[], kind: 'target' | 'host', layered: Layered<Target> | Layered<HostModel>): void {
  const [clash] = findAliasClashes(entries)
  if (!clash) return
  const [spelling, firstKey, secondKey] = clash
  throw new CatalogError(
    'CATALOG_INVALID',
    `${layered.fileOf(secondKey)}: ${kind} "${secondKey}" alias "${spelling}" is already used by ${kind} "${firstKey}" (${layered.fileOf(firstKey)})`,
    {fix: ['give each alias to one entry only; spellings are compared ignoring case, spaces, "-", "_" and "."']},
  )
}

function yamlError(error: unknown, fileName: string): CatalogError {
  if (error instanceof YAMLException) {
    const line = error.mark ? `:${error.mark.line + 1}` : ''
    return new CatalogError('CATALOG_INVALID', `${fileName}${line}: YAML syntax error: ${error.reason}`, {cause: error})
  }
  return new CatalogError('CATALOG_INVALID', `${fileName}: cannot parse YAML`, {cause: error})
}

const LIST_KIND: Record<string, string> = {targets: 'target', hosts: 'host'}

/** One line naming file, entry (key, else index) and field path, from the first schema issue. */
function schemaError(error: z.ZodError, raw: unknown, fileName: string): CatalogError {
  // A wrong value is what the user just typed; missing fields are often its consequence (an entry cut short).
  const issue = error.issues.find((i) => !isMissing(i, raw)) ?? error.issues[0]
  const where = describePath(issue.path, raw)
  const more = error.issues.length > 1 ? ` (and ${error.issues.length - 1} more)` : ''
  return new CatalogError('CATALOG_INVALID', `${fileName}: ${where}: ${describeIssue(issue, raw)}${more}`, {
    fix: ['see the schema in src/catalog/schema.ts or the built-in catalog/gpus.yaml for examples'],
  })
}

function describePath(issuePath: readonly PropertyKey[], raw: unknown): string {
  const [list, index, ...rest] = issuePath
  if (typeof list === 'string' && list in LIST_KIND && typeof index === 'number') {
    const entry = valueAt(raw, [list, index])
    const key = isRecord(entry) && typeof entry.key === 'string' ? `"${entry.key}"` : `#${index}`
    const field = rest.length > 0 ? ` field "${formatPath(rest)}"` : ''
    return `${LIST_KIND[list]} ${key}${field}`
  }
  return issuePath.length === 0 ? 'top level' : `field "${formatPath(issuePath)}"`
}

function describeIssue(issue: z.core.$ZodIssue, raw: unknown): string {
  switch (issue.code) {
    case 'invalid_type':
      return isMissing(issue, raw) ? `missing (expected ${issue.expected})` : `expected ${issue.expected}`
    case 'unrecognized_keys':
      return `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `"${k}"`).join(', ')}`
    case 'invalid_value': {
      const allowed = issue.values.map((v) => JSON.stringify(v))
      return allowed.length === 1 ? `expected ${allowed[0]}` : `expected one of ${allowed.join(', ')}`
    }
    default:
      return issue.message
  }
}

function isMissing(issue: z.core.$ZodIssue, raw: unknown): boolean {
  return issue.code === 'invalid_type' && valueAt(raw, issue.path) === undefined
}

function formatPath(parts: readonly PropertyKey[]): string {
  return parts.map((part, i) => (typeof part === 'number' ? `[${part}]` : `${i === 0 ? '' : '.'}${String(part)}`)).join('')
}

function valueAt(raw: unknown, parts: readonly PropertyKey[]): unknown {
  let current = raw
  for (const part of parts) {
    if (!isRecord(current) && !Array.isArray(current)) return undefined
    current = (current as Record<PropertyKey, unknown>)[part]
  }
  return current
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
