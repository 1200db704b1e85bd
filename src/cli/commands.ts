import { readFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import { PUBLIC_KEY_SCOPES, SCOPES } from '../access/scopes.ts'
import type { AdminClient, KeyChanges, Page, PageRequest } from './admin-client.ts'
import {
  auditTable,
  businessDetails,
  businessTable,
  CLI,
  flowDetails,
  flowTable,
  keyDetails,
  keyTable,
  memberDetails,
  memberTable,
  recordLines,
  runTable,
  signInLinkLines,
  usageLines,
} from './output.ts'

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

const keySettingOptions = {
  name: { type: 'string' },
  description: { type: 'string' },
  origin: { type: 'string', multiple: true },
  scope: { type: 'string', multiple: true },
  expires: { type: 'string' },
  'rate-limit': { type: 'string' },
  'origin-policy': { type: 'string' },
  'allow-ip': { type: 'string', multiple: true },
  'ip-policy': { type: 'string' },
} satisfies Record<string, OptionSpec>

/** Admin lists answer a page at a time; `nextCursor` comes back as --cursor. */
const pageOptions = {
  limit: { type: 'string' },
  cursor: { type: 'string' },
} satisfies Record<string, OptionSpec>
const PAGE_USAGE = '[--limit N] [--cursor CURSOR]'

export const commands: Command[] = [
  {
    name: 'businesses create',
    usage: '--name NAME',
    summary: 'Create a business.',
    options: { name: { type: 'string' } },
    required: ['name'],
    async run({ options, api }) {
      const business = await api.createBusiness(text(options, 'name')!)
      return { json: business, text: `Created business "${business.name}".\n${businessDetails(business)}` }
    },
  },
  {
    name: 'businesses list',
    usage: PAGE_USAGE,
    summary: 'List the businesses, newest first.',
    options: pageOptions,
    required: [],
    async run({ options, api }) {
      const page = await api.listBusinesses(pageOf(options))
      return listAnswer(page, businessTable, 'businesses list', options)
    },
  },
  {
    name: 'keys create',
    usage:
      '--business ID --type public|private --name NAME [--description TEXT]\n' +
      '    [--origin ORIGIN]... [--scope SCOPE]... [--expires ISO-8601] [--rate-limit N/SECONDS]\n' +
      '    [--origin-policy enforce|report] [--allow-ip ADDRESS|CIDR]... [--ip-policy enforce|report]\n' +
      '    [--created-by WHO]',
    summary: 'Create a key and print it, this once.',
    options: { business: { type: 'string' }, type: { type: 'string' }, 'created-by': { type: 'string' }, ...keySettingOptions },
    required: ['business', 'type', 'name'],
    async run({ options, api }) {
      const type = text(options, 'type')
      if (type !== 'public' && type !== 'private') {
        throw new UsageError(`--type must be "public" or "private", not "${type}".`)
      }
      const description = text(options, 'description')
      const expires = text(options, 'expires')
      const created = await api.createKey(text(options, 'business')!, {
        type,
        name: text(options, 'name')!,
        ...(description ? { description } : {}),
        allowedOrigins: texts(options, 'origin'),
        scopes: scopesOf(options),
        ...(expires && expires !== 'never' ? { expiresAt: expires } : {}),
        ...rateLimitOf(options),
        ...originPolicyOf(options),
        ...allowedIpsOf(options),
        ...ipPolicyOf(options),
        createdBy: text(options, 'created-by') ?? currentUser(),
      })
      const { key, ...record } = created
      return {
        json: created,
        text: [
          `Created ${record.type} key "${record.name}".`,
          keyDetails(record),
          '',
          recordLines([['KEY', key]]),
          '',
          'Save this key now: it will not be shown again.',
        ].join('\n'),
      }
    },
  },
  {
    name: 'keys list',
    usage: `--business ID ${PAGE_USAGE}`,
    summary: "List a business's keys, newest first (hints only, never the keys).",
    options: { business: { type: 'string' }, ...pageOptions },
    required: ['business'],
    async run({ options, api }) {
      const business = text(options, 'business')!
      const page = await api.listKeys(business, pageOf(options))
      return listAnswer(page, keyTable, `keys list --business ${business}`, options)
    },
  },
  {
    name: 'keys show',
    usage: 'KEY_ID',
    summary: 'Show one key.',
    target: 'KEY_ID',
    options: {},
    required: [],
    async run({ target, api }) {
      const key = await api.getKey(target!)
      return { json: key, text: keyDetails(key) }
    },
  },
  {
    name: 'keys update',
    usage:
      'KEY_ID [--name NAME] [--description TEXT] [--origin ORIGIN]... [--scope SCOPE]...\n' +
      '    [--expires ISO-8601|never] [--rate-limit N/SECONDS|default] [--origin-policy enforce|report]\n' +
      "    [--allow-ip ADDRESS|CIDR]... (--allow-ip '' allows any address) [--ip-policy enforce|report]",
    summary: 'Change a key; origins and scopes given replace the current lists. Effective on its next request.',
    target: 'KEY_ID',
    options: keySettingOptions,
    required: [],
    async run({ options, target, api }) {
      const changes: KeyChanges = {}
      const name = text(options, 'name')
      if (name !== undefined) changes.name = name
      const description = text(options, 'description')
      // An empty description clears it.
      if (description !== undefined) changes.description = description === '' ? null : description
      if (options.origin !== undefined) changes.allowedOrigins = texts(options, 'origin')
      if (options.scope !== undefined) changes.scopes = scopesOf(options)
      const expires = text(options, 'expires')
      if (expires !== undefined) changes.expiresAt = expires === 'never' ? null : expires
      Object.assign(changes, rateLimitOf(options), originPolicyOf(options), allowedIpsOf(options), ipPolicyOf(options))
      if (Object.keys(changes).length === 0) {
        throw new UsageError(
          'keys update needs at least one change: --name, --description, --origin, --scope, --expires, --rate-limit, --origin-policy, --allow-ip or --ip-policy.',
        )
      }
      const key = await api.updateKey(target!, changes)
      return { json: key, text: `Updated key "${key.name}".\n${keyDetails(key)}` }
    },
  },
  {
    name: 'keys revoke',
    usage: 'KEY_ID',
    summary: 'Revoke a key: refused from its next request on; the record and its data are kept.',
    target: 'KEY_ID',
    options: {},
    required: [],
    async run({ target, api }) {
      await api.revokeKey(target!)
      const key = await api.getKey(target!)
      return { json: key, text: `Revoked key "${key.name}".\n${keyDetails(key)}` }
    },
  },
  {
    name: 'keys roll',
    usage: 'KEY_ID [--grace 0|30m|1h|24h|7d]',
    summary: 'Replace a key by a new one with the same settings; the old one works for the grace (default 24h), then is refused.',
    target: 'KEY_ID',
    options: { grace: { type: 'string' } },
    required: [],
    async run({ options, target, api }) {
      const grace = text(options, 'grace')
      const created = await api.rollKey(target!, grace === undefined ? undefined : durationSeconds(grace))
      const { key, ...record } = created
      const old = await api.getKey(target!)
      return {
        json: created,
        text: [
          `Rolled key "${record.name}": the old key works until ${old.expiresAt ?? 'now'}.`,
          keyDetails(record),
          '',
          recordLines([['KEY', key]]),
          '',
          'Save this key now: it will not be shown again. Deploy it before the old one stops.',
        ].join('\n'),
      }
    },
  },
  {
    name: 'keys usage',
    usage: 'KEY_ID [--interval minute|hour|day]',
    summary:
      "A key's accepted and refused requests (the last hour by minute, day by hour, or week by day), refused origins and scopes' last use.",
    target: 'KEY_ID',
    options: { interval: { type: 'string' } },
    required: [],
    async run({ options, target, api }) {
      const interval = text(options, 'interval') ?? 'hour'
      if (!['minute', 'hour', 'day'].includes(interval)) throw new UsageError(`--interval must be minute, hour or day, not "${interval}".`)
      const usage = await api.keyUsage(target!, interval)
      return { json: usage, text: usageLines(usage) }
    },
  },
  {
    name: 'keys audit',
    usage: `KEY_ID ${PAGE_USAGE}`,
    summary: "A key's audit trail, newest first.",
    target: 'KEY_ID',
    options: pageOptions,
    required: [],
    async run({ options, target, api }) {
      const page = await api.keyAudit(target!, pageOf(options))
      return listAnswer(page, auditTable, `keys audit ${target}`, options)
    },
  },
  {
    name: 'businesses audit',
    usage: `--business ID ${PAGE_USAGE}`,
    summary: "A business's audit trail (keys and members), newest first.",
    options: { business: { type: 'string' }, ...pageOptions },
    required: ['business'],
    async run({ options, api }) {
      const business = text(options, 'business')!
      const page = await api.businessAudit(business, pageOf(options))
      return listAnswer(page, auditTable, `businesses audit --business ${business}`, options)
    },
  },
  {
    name: 'businesses identity-secret',
    usage: '--business ID',
    summary: "Set (or replace) a business's identity secret for verified public-key people writes; printed this once.",
    options: { business: { type: 'string' } },
    required: ['business'],
    async run({ options, api }) {
      const { secret } = await api.setIdentitySecret(text(options, 'business')!)
      return {
        json: { secret },
        text: [
          recordLines([['SECRET', secret]]),
          '',
          "Keep it on your servers only: they sign each person's externalId (or lower-cased email) with it",
          '(HMAC-SHA256, hex) and pages send that as identityHash. Any earlier secret no longer verifies.',
        ].join('\n'),
      }
    },
  },
  {
    name: 'flows create',
    usage: '--business ID --name NAME',
    summary: 'Define a flow that keys with FLOW_TRIGGER can trigger.',
    options: { business: { type: 'string' }, name: { type: 'string' } },
    required: ['business', 'name'],
    async run({ options, api }) {
      const flow = await api.createFlow(text(options, 'business')!, text(options, 'name')!)
      return { json: flow, text: `Created flow "${flow.name}".\n${flowDetails(flow)}` }
    },
  },
  {
    name: 'flows list',
    usage: `--business ID ${PAGE_USAGE}`,
    summary: "List a business's flows, newest first.",
    options: { business: { type: 'string' }, ...pageOptions },
    required: ['business'],
    async run({ options, api }) {
      const business = text(options, 'business')!
      const page = await api.listFlows(business, pageOf(options))
      return listAnswer(page, flowTable, `flows list --business ${business}`, options)
    },
  },
  {
    name: 'flows runs',
    usage: `FLOW_ID ${PAGE_USAGE}`,
    summary: "List a flow's runs, newest first (--json adds each run's input).",
    target: 'FLOW_ID',
    options: pageOptions,
    required: [],
    async run({ options, target, api }) {
      const page = await api.listRuns(target!, pageOf(options))
      return listAnswer(page, runTable, `flows runs ${target}`, options)
    },
  },
  {
    name: 'members create',
    usage: '--business ID --email EMAIL [--role owner|member] [--password-stdin]',
    summary: 'Add a dashboard member; without a password, print a one-time sign-in link.',
    // `password` exists only to refuse it with advice instead of "Unknown option".
    options: {
      business: { type: 'string' },
      email: { type: 'string' },
      role: { type: 'string' },
      'password-stdin': { type: 'boolean' },
      password: { type: 'string' },
    },
    required: ['business', 'email'],
    async run({ options, api, readStdin }) {
      if (options.password !== undefined) {
        throw new UsageError(
          'members create takes no --password: arguments are visible to other users in the process list. ' +
            'Pipe it in with --password-stdin, or leave it out to get a one-time sign-in link.',
        )
      }
      const role = text(options, 'role') ?? 'member'
      if (role !== 'owner' && role !== 'member') {
        throw new UsageError(`--role must be "owner" or "member", not "${role}".`)
      }
      let password: string | undefined
      if (options['password-stdin'] === true) {
        password = withoutLineEnd(await readStdin())
        if (password === '') throw new UsageError('--password-stdin read no password from standard input.')
      }
      const created = await api.createMember(text(options, 'business')!, {
        email: text(options, 'email')!,
        role,
        ...(password === undefined ? {} : { password }),
      })
      const { signInLink, ...member } = created
      return {
        json: created,
        text: [
          `Created ${member.role} ${member.email}.`,
          memberDetails(member),
          ...(signInLink ? ['', signInLinkLines(signInLink)] : ['', 'They sign in with their email and the password given.']),
        ].join('\n'),
      }
    },
  },
  {
    name: 'members list',
    usage: `--business ID ${PAGE_USAGE}`,
    summary: "List a business's dashboard members, oldest first.",
    options: { business: { type: 'string' }, ...pageOptions },
    required: ['business'],
    async run({ options, api }) {
      const business = text(options, 'business')!
      const page = await api.listMembers(business, pageOf(options))
      return listAnswer(page, memberTable, `members list --business ${business}`, options)
    },
  },
  {
    name: 'members link',
    usage: 'MEMBER_ID',
    summary: 'Print a new one-time sign-in link, e.g. for a forgotten password.',
    target: 'MEMBER_ID',
    options: {},
    required: [],
    async run({ target, api }) {
      const { signInLink } = await api.issueSignInLink(target!)
      return { json: { signInLink }, text: `New sign-in link for member ${target}.\n${signInLinkLines(signInLink)}` }
    },
  },
  {
    name: 'members remove',
    usage: 'MEMBER_ID',
    summary: 'Remove a dashboard member; their sessions and sign-in links end at once.',
    target: 'MEMBER_ID',
    options: {},
    required: [],
    async run({ target, api }) {
      await api.removeMember(target!)
      return { json: { id: target, removed: true }, text: `Removed member ${target}; their sessions and sign-in links ended.` }
    },
  },
]

export const globalOptions = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} satisfies Record<string, OptionSpec>

export function commandHelp(command: Command): string {
  return `Usage: ${CLI} ${command.name}${command.usage ? ' ' + command.usage : ''} [--json]\n  ${command.summary}`
}

export function helpText(): string {
  const usage = commands.map((c) => `  ${c.name}${c.usage ? ' ' + c.usage : ''}\n      ${c.summary}`)
  return `keygate operator CLI: businesses, keys, flows and dashboard members, through /admin/v0.

Usage: ${CLI} <command> [options]

Commands:
${usage.join('\n')}
  help
      Show this help.

Options for every command:
  --url URL     the service's base URL (env KEYGATE_URL; default http://localhost:3000)
  --token TOKEN the operator token the service runs with (env ADMIN_TOKEN; prefer the
                variable: arguments are visible to other users in the process list)
  --json        print the server's JSON answer instead of text (lists: {"data", "nextCursor"});
                to pipe it, run npm -s (npm run -s cli -- ...) so npm prints no banner
  -h, --help    show this help

Scopes: repeat --scope or separate them with commas. The 13 scopes:
${wrap(SCOPES.join(', '), '  ')}
A public key may hold only
${wrap(PUBLIC_KEY_SCOPES.join(', '), '  ')}
and needs at least one --origin: *, example.com (and its subdomains), app.example.com,
https://app.example.com:8443 or localhost:3000. A private key takes no --origin;
it may be limited to client addresses with --allow-ip (repeat it): 203.0.113.7,
198.51.100.0/24 or 2001:db8::/48. Without any, it works from any address.
--created-by defaults to the operating-system user.

Members: --role defaults to member. A password is never an argument: --password-stdin
reads it from standard input (one trailing newline is dropped), e.g.
  ${CLI} members create --business ID --email ada@example.com --password-stdin < pw.txt
Without it the answer carries a one-time sign-in link on which the member chooses a
password. A link is shown once, works once and expires at the time printed with it;
members link issues another (using one ends the member's other dashboard sessions).

Lists: a page of at most --limit records (1-1000, default 100); when there are more,
the text ends with the command for the next page, and --json carries its "nextCursor",
which --cursor takes back.

Exit status: 0 done, 1 the server refused (its error code and message are printed) or
could not be reached, 2 a usage error.`
}

function wrap(words: string, indent: string, width = 88): string {
  const lines: string[] = []
  let line = indent
  for (const word of words.split(' ')) {
    if (line.length + word.length > width && line.trim() !== '') {
      lines.push(line.trimEnd())
      line = indent
    }
    line += word + ' '
  }
  lines.push(line.trimEnd())
  return lines.join('\n')
}

/** `echo secret |` and files end with a newline that is not part of the password. */
function withoutLineEnd(input: string): string {
  return input.replace(/\r?\n$/, '')
}

function pageOf(options: OptionValues): PageRequest {
  const limit = text(options, 'limit')
  const cursor = text(options, 'cursor')
  return { ...(limit === undefined ? {} : { limit }), ...(cursor === undefined ? {} : { cursor }) }
}

/**
 * The server's page as it came (`{data, nextCursor}`) for --json; for people, the table
 * and, when there is more, the command that shows the next page.
 */
function listAnswer<T>(page: Page<T>, table: (rows: T[]) => string, command: string, options: OptionValues): CommandResult {
  if (page.nextCursor === null) return { json: page, text: table(page.data) }
  const limit = text(options, 'limit')
  const next = `${CLI} ${command}${limit === undefined ? '' : ` --limit ${limit}`} --cursor ${page.nextCursor}`
  return { json: page, text: `${table(page.data)}\n\nMore: ${next}` }
}

function text(options: OptionValues, name: string): string | undefined {
  const value = options[name]
  return typeof value === 'string' ? value : undefined
}

/** `--rate-limit 100/60` (100 requests per 60 s); `default` goes back to the service default. */
function rateLimitOf(options: OptionValues): { rateLimit?: { limit: number; windowSeconds: number } | null } {
  const written = text(options, 'rate-limit')
  if (written === undefined) return {}
  if (written === 'default') return { rateLimit: null }
  const match = /^(\d{1,7})\/(\d{1,5})$/.exec(written.trim())
  if (!match) {
    throw new UsageError(`--rate-limit takes REQUESTS/SECONDS, like 100/60, or "default"; not "${written}".`)
  }
  return { rateLimit: { limit: Number(match[1]), windowSeconds: Number(match[2]) } }
}

function texts(options: OptionValues, name: string): string[] {
  const value = options[name]
  if (!Array.isArray(value)) return typeof value === 'string' ? [value] : []
  return value.filter((item): item is string => typeof item === 'string')
}

function scopesOf(options: OptionValues): string[] {
  return texts(options, 'scope')
    .flatMap((value) => value.split(','))
    .map((scope) => scope.trim())
    .filter((scope) => scope !== '')
}

/** The operating-system user, for `createdBy`. */
function currentUser(): string {
  const fromEnv = process.env.USER || process.env.LOGNAME || process.env.USERNAME
  if (fromEnv) return fromEnv
  // Bun's os.userInfo() answers "unknown" when USER is unset: read the passwd entry.
  try {
    const uid = String(process.getuid?.())
    const entry = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((line) => line.split(':')[2] === uid)
    if (entry) return entry.split(':')[0]!
  } catch {
    // No /etc/passwd (Windows, minimal containers).
  }
  try {
    return userInfo().username
  } catch {
    return 'unknown'
  }
}

/**
 * `--allow-ip` (private keys, repeatable): the addresses and ranges allowed; an empty value
 * (`--allow-ip ''`) stands for none, so an update can clear the list.
 */
function allowedIpsOf(options: OptionValues): { allowedIps?: string[] } {
  if (options['allow-ip'] === undefined) return {}
  return { allowedIps: texts(options, 'allow-ip').filter((entry) => entry.trim() !== '') }
}

/** `--ip-policy`: "report" serves and counts addresses the list does not allow (private keys). */
function ipPolicyOf(options: OptionValues): { ipPolicy?: 'enforce' | 'report' } {
  const policy = text(options, 'ip-policy')
  if (policy === undefined) return {}
  if (policy !== 'enforce' && policy !== 'report') throw new UsageError(`--ip-policy must be "enforce" or "report", not "${policy}".`)
  return { ipPolicy: policy }
}

/** `--origin-policy`: "report" serves and counts origins the list does not allow (public keys). */
function originPolicyOf(options: OptionValues): { originPolicy?: 'enforce' | 'report' } {
  const policy = text(options, 'origin-policy')
  if (policy === undefined) return {}
  if (policy !== 'enforce' && policy !== 'report') throw new UsageError(`--origin-policy must be "enforce" or "report", not "${policy}".`)
  return { originPolicy: policy }
}

/** `0`, `90` (seconds), `30m`, `1h`, `24h`, `7d` as seconds. */
export function durationSeconds(value: string): number {
  const match = /^(\d{1,7})([smhd]?)$/.exec(value.trim())
  if (!match) throw new UsageError(`--grace must be a duration such as 0, 30m, 1h, 24h or 7d, not "${value}".`)
  const unit = { '': 1, s: 1, m: 60, h: 3_600, d: 86_400 }[match[2] as '' | 's' | 'm' | 'h' | 'd']
  return Number(match[1]) * unit
}
