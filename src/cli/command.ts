import type { AdminClient, Page, PageRequest } from './admin-client.ts'
import { CLI } from './output.ts'

// What a command is, and what the commands share: reading options, and answering a page.

/** A mistake in the command line itself: the CLI answers with the help and exit status 2. */
export class UsageError extends Error {}

export interface OptionSpec {
  type: 'string' | 'boolean'
  multiple?: boolean
  short?: string
}

export type OptionValues = Record<string, string | boolean | (string | boolean)[] | undefined>

export interface CommandInput {
  options: OptionValues
  /** The command's one positional argument (a key or member id), when it takes one. */
  target: string | undefined
  api: AdminClient
  /** All of standard input, read only by a command that asks for it. */
  readStdin: () => Promise<string>
}

/** What a command answers: the JSON for `--json` and the text for people. */
export interface CommandResult {
  json: unknown
  text: string
}

export interface Command {
  name: string
  /** Usage after the name, as shown in the help. */
  usage: string
  summary: string
  target?: string
  options: Record<string, OptionSpec>
  required: string[]
  run(input: CommandInput): Promise<CommandResult>
}

/** Admin lists answer a page at a time; `nextCursor` comes back as --cursor. */
export const pageOptions = {
  limit: { type: 'string' },
  cursor: { type: 'string' },
} satisfies Record<string, OptionSpec>
export const PAGE_USAGE = '[--limit N] [--cursor CURSOR]'

export function text(options: OptionValues, name: string): string | undefined {
  const value = options[name]
  return typeof value === 'string' ? value : undefined
}

export function texts(options: OptionValues, name: string): string[] {
  const value = options[name]
  if (!Array.isArray(value)) return typeof value === 'string' ? [value] : []
  return value.filter((item): item is string => typeof item === 'string')
}

export function pageOf(options: OptionValues): PageRequest {
  const limit = text(options, 'limit')
  const cursor = text(options, 'cursor')
  return { ...(limit === undefined ? {} : { limit }), ...(cursor === undefined ? {} : { cursor }) }
}

/**
 * The server's page as it came (`{data, nextCursor}`) for --json; for people, the table
 * and, when there is more, the command that shows the next page.
 */
export function listAnswer<T>(page: Page<T>, table: (rows: T[]) => string, command: string, options: OptionValues): CommandResult {
  if (page.nextCursor === null) return { json: page, text: table(page.data) }
  const limit = text(options, 'limit')
  const next = `${CLI} ${command}${limit === undefined ? '' : ` --limit ${limit}`} --cursor ${page.nextCursor}`
  return { json: page, text: `${table(page.data)}\n\nMore: ${next}` }
}
