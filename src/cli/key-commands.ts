import { readFileSync } from 'node:fs'
import { userInfo } from 'node:os'
import type { KeyChanges } from './admin-client.ts'
import {
  listAnswer,
  PAGE_USAGE,
  pageOf,
  pageOptions,
  text,
  texts,
  UsageError,
  type Command,
  type OptionSpec,
  type OptionValues,
} from './command.ts'
import { auditTable, keyDetails, keyTable, recordLines, usageLines } from './output.ts'

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

export const keysCreate: Command = {
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
}

export const keysList: Command = {
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
}

export const keysShow: Command = {
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
}

export const keysUpdate: Command = {
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
}

export const keysRevoke: Command = {
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
}

export const keysRoll: Command = {
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
}

export const keysUsage: Command = {
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
}

export const keysAudit: Command = {
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
