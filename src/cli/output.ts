import type { AuditEntry, KeyUsage } from './admin-client.ts'
import type { Business, DeliveryRecord, EndpointRecord, Erasure, Flow, FlowRun, KeyRecord, Member, SignInLink } from './admin-client.ts'

/**
 * How a user runs the CLI, in every hint it prints: npm is on the PATH wherever Node is,
 * bun may not be (it comes as a package, in node_modules/.bin).
 */
export const CLI = 'npm run cli --'

/**
 * Human output of the CLI: aligned "label  value" lines for one record, a table for
 * lists. Key records carry only the hint (`pk_…abcd`): the full key appears in the create
 * answer and nowhere else.
 */

export function recordLines(fields: [label: string, value: string][]): string {
  const width = Math.max(...fields.map(([label]) => label.length))
  return fields.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n')
}

export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((header, i) => Math.max(header.length, ...rows.map((row) => row[i]!.length)))
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd()
  return [line(headers), ...rows.map(line)].join('\n')
}

/** ISO-8601 without milliseconds: `2026-11-21T06:17:03Z`. */
export function time(iso: string | null, none = 'never'): string {
  return iso === null ? none : iso.replace(/\.\d{3}Z$/, 'Z')
}

export function keyStatus(key: KeyRecord, now = Date.now()): string {
  if (key.revokedAt) return `revoked ${time(key.revokedAt)}`
  if (key.expiresAt && Date.parse(key.expiresAt) <= now) return `expired ${time(key.expiresAt)}`
  return 'active'
}

export function keyDetails(key: KeyRecord): string {
  return recordLines([
    ['id', key.id],
    ['business', key.businessId],
    ['type', key.type],
    ['name', key.name],
    ['description', key.description ?? '-'],
    ['key', `${key.keyHint} (hint only)`],
    ['origins', key.allowedOrigins.join(', ') || '-'],
    ['scopes', key.scopes.join(', ')],
    ['expires', time(key.expiresAt)],
    ['rate limit', key.rateLimit ? `${key.rateLimit.limit} per ${key.rateLimit.windowSeconds} s` : 'service default'],
    ['origin policy', key.originPolicy === 'report' ? 'report only: other origins served and counted' : 'enforce'],
    ...(key.type === 'private'
      ? ([
          ['allowed IPs', key.allowedIps.join(', ') || 'any address'],
          ['IP policy', key.ipPolicy === 'report' ? 'report only: other addresses served and counted' : 'enforce'],
        ] as [string, string][])
      : []),
    ...(key.rolledFrom ? ([['rolled from', key.rolledFrom]] as [string, string][]) : []),
    ...(key.replacedBy ? ([['replaced by', key.replacedBy]] as [string, string][]) : []),
    ['last used', time(key.lastUsedAt)],
    ['created', `${time(key.createdAt)} by ${key.createdBy}`],
    ['status', keyStatus(key)],
  ])
}

export function keyTable(keys: KeyRecord[]): string {
  if (keys.length === 0) return 'No keys.'
  return table(
    ['ID', 'TYPE', 'NAME', 'KEY', 'SCOPES', 'LAST USED', 'STATUS'],
    keys.map((key) => [key.id, key.type, key.name, key.keyHint, key.scopes.join(','), time(key.lastUsedAt), keyStatus(key)]),
  )
}

export function businessTable(businesses: Business[]): string {
  if (businesses.length === 0) return 'No businesses.'
  return table(
    ['ID', 'NAME', 'CREATED'],
    businesses.map((b) => [b.id, b.name, time(b.createdAt)]),
  )
}

export function businessDetails(business: Business): string {
  return recordLines([
    ['id', business.id],
    ['name', business.name],
    ['created', time(business.createdAt)],
    [
      'event retention',
      `${business.effectiveEventRetentionDays} days${business.eventRetentionDays === null ? " (the operator's EVENT_RETENTION_DAYS)" : ''}`,
    ],
  ])
}

export function erasureDetails(erasure: Erasure): string {
  return recordLines([
    ['id', erasure.id],
    ['status', erasure.status],
    ['requested', time(erasure.requestedAt)],
    ['completed', time(erasure.completedAt, 'not yet')],
    ['deleted', String(erasure.deleted)],
  ])
}

export function flowDetails(flow: Flow): string {
  return recordLines([
    ['id', flow.id],
    ['business', flow.businessId],
    ['name', flow.name],
    ['created', time(flow.createdAt)],
  ])
}

export function flowTable(flows: Flow[]): string {
  if (flows.length === 0) return 'No flows.'
  return table(
    ['ID', 'NAME', 'CREATED'],
    flows.map((f) => [f.id, f.name, time(f.createdAt)]),
  )
}

export function runTable(runs: FlowRun[]): string {
  if (runs.length === 0) return 'No runs.'
  return table(
    ['ID', 'STATUS', 'KEY ID', 'IDEMPOTENCY KEY', 'CREATED'],
    runs.map((r) => [r.id, r.status, r.keyId, r.idempotencyKey ?? '-', time(r.createdAt)]),
  )
}

export function memberDetails(member: Member): string {
  return recordLines([
    ['id', member.id],
    ['business', member.businessId],
    ['email', member.email],
    ['role', member.role],
    ['password', member.passwordSet ? 'set' : 'not set yet (chosen on a sign-in link)'],
    ['status', member.pending ? 'pending: joins by the sign-in link' : 'joined'],
    ['created', time(member.createdAt)],
  ])
}

export function memberTable(members: Member[]): string {
  if (members.length === 0) return 'No members.'
  return table(
    ['ID', 'EMAIL', 'ROLE', 'STATUS', 'CREATED'],
    members.map((m) => [m.id, m.email, m.role, m.pending ? 'pending' : 'joined', time(m.createdAt)]),
  )
}

/** The link and the warning that goes with it: nothing else ever shows it again. */
export function signInLinkLines(link: SignInLink): string {
  return [
    recordLines([
      ['SIGN-IN LINK', link.url],
      ['expires', time(link.expiresAt)],
    ]),
    '',
    `Send this link to the member now: it is shown once, works once, and expires at ${time(link.expiresAt)}.`,
    `On it they choose a password (an account that has one gets the new one: its other sessions and links end) and join the business.`,
    `Lost or expired? Issue another: ${CLI} members link MEMBER_ID`,
  ].join('\n')
}

export function auditTable(entries: AuditEntry[]): string {
  if (entries.length === 0) return 'No entries.'
  return table(
    ['AT', 'ACTOR', 'ACTION', 'KEY', 'CHANGES'],
    entries.map((entry) => [
      time(entry.at),
      entry.actor,
      entry.action,
      entry.keyId ?? '-',
      Object.entries(entry.changes)
        .map(([field, change]) => `${field}: ${shortValue(change.from)} -> ${shortValue(change.to)}`)
        .join('; ') || '-',
    ]),
  )
}

function shortValue(value: unknown): string {
  const shown = value === null || value === undefined ? '-' : typeof value === 'string' ? value : JSON.stringify(value)
  return shown.length > 60 ? `${shown.slice(0, 57)}...` : shown
}

export function usageLines(usage: KeyUsage): string {
  const refused: Record<string, number> = {}
  let accepted = 0
  for (const point of usage.series) {
    accepted += point.accepted
    for (const [code, n] of Object.entries(point.refused)) refused[code] = (refused[code] ?? 0) + n
  }
  const lines = [
    recordLines([
      ['key', usage.keyId],
      ['from', time(usage.from)],
      ['to', time(usage.to)],
      ['accepted', String(accepted)],
      [
        'refused',
        Object.entries(refused)
          .map(([code, n]) => `${code} ${n}`)
          .join(', ') || '0',
      ],
    ]),
  ]
  if (usage.refusedOrigins.length > 0) {
    lines.push(
      '',
      table(
        ['REFUSED ORIGIN', 'COUNT', 'LAST SEEN', 'SERVED'],
        usage.refusedOrigins.map((o) => [o.origin, String(o.count), time(o.lastSeenAt), o.reported ? 'yes (report-only)' : 'no']),
      ),
    )
    if (usage.refusedOriginsOther > 0) lines.push(`and ${usage.refusedOriginsOther} requests from other origins`)
  }
  if (usage.refusedIps.length > 0) {
    lines.push(
      '',
      table(
        ['REFUSED ADDRESS', 'COUNT', 'LAST SEEN', 'SERVED'],
        usage.refusedIps.map((o) => [o.ip, String(o.count), time(o.lastSeenAt), o.reported ? 'yes (report-only)' : 'no']),
      ),
    )
    if (usage.refusedIpsOther > 0) lines.push(`and ${usage.refusedIpsOther} requests from other addresses`)
  }
  lines.push(
    '',
    table(
      ['SCOPE', 'LAST USED'],
      usage.scopes.map((s) => [s.scope, time(s.lastUsedAt)]),
    ),
  )
  return lines.join('\n')
}

export function endpointDetails(endpoint: EndpointRecord): string {
  return recordLines([
    ['ID', endpoint.id],
    ['URL', endpoint.url],
    ['Events', endpoint.events.join(', ')],
    ['Description', endpoint.description ?? '-'],
    ['Enabled', endpoint.enabled ? 'yes' : `no, since ${time(endpoint.disabledAt)}`],
    ['Failing since', time(endpoint.failingSince, '-')],
    ['Created', time(endpoint.createdAt)],
  ])
}

export function endpointTable(endpoints: EndpointRecord[]): string {
  if (endpoints.length === 0) return 'No webhook endpoints.'
  return table(
    ['ID', 'URL', 'EVENTS', 'ENABLED'],
    endpoints.map((e) => [e.id, e.url, e.events.join(','), e.enabled ? 'yes' : 'no']),
  )
}

export function deliveryTable(deliveries: DeliveryRecord[]): string {
  if (deliveries.length === 0) return 'No deliveries yet.'
  return table(
    ['ID', 'EVENT', 'STATUS', 'ATTEMPTS', 'ANSWER', 'CREATED'],
    deliveries.map((d) => [
      d.id,
      d.event,
      d.status,
      String(d.attempts),
      d.lastStatus === null ? (d.lastError ?? '-') : String(d.lastStatus),
      time(d.createdAt),
    ]),
  )
}
