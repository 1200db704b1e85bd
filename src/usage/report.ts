import { queryRows, sql, type Db } from '../../db/client.ts'
import { USAGE_RETENTION } from './recorder.ts'

export const USAGE_INTERVALS = ['minute', 'hour', 'day'] as const
export type UsageInterval = (typeof USAGE_INTERVALS)[number]

const STEP: Record<UsageInterval, number> = { minute: 60_000, hour: 3_600_000, day: 86_400_000 }
const TABLE: Record<UsageInterval, string> = { minute: 'key_usage_minutes', hour: 'key_usage_hours', day: 'key_usage_days' }
/** The longest range one answer covers per interval: what is kept, and at most ~3000 points. */
export const MAX_RANGE: Record<UsageInterval, number> = {
  minute: USAGE_RETENTION.minutes,
  hour: USAGE_RETENTION.hours,
  day: USAGE_RETENTION.days,
}

export interface UsagePoint {
  at: string
  accepted: number
  refused: Record<string, number>
}

export interface UsageReport {
  keyId: string
  from: string
  to: string
  interval: UsageInterval
  series: UsagePoint[]
  refusedOrigins: { origin: string; count: number; lastSeenAt: string; reported: boolean }[]
  /** Requests refused for an origin not in `refusedOrigins`: beyond the 50, or not kept by name. */
  refusedOriginsOther: number
  refusedIps: { ip: string; count: number; lastSeenAt: string; reported: boolean }[]
  /** Requests refused for a client address not in `refusedIps`. */
  refusedIpsOther: number
  scopes: { scope: string; lastUsedAt: string | null }[]
}

/** The start of the period of `interval` holding `at` (UTC). */
export function periodStart(at: number, interval: UsageInterval): number {
  return at - (at % STEP[interval])
}

/** Refused origins and addresses the report names; the rest is one count. */
const REFUSALS_SHOWN = 50

/**
 * A key's usage between `from` and `to`: every period of the range
 * in order, zeros included (a chart needs no gap-filling), the 50 most frequent refused
 * origins and client addresses of the range with the count of the others, and each of the
 * key's scopes with its last use.
 */
export async function usageReport(
  db: Db,
  key: { id: string; scopes: readonly string[] },
  range: { from: number; to: number; interval: UsageInterval },
): Promise<UsageReport> {
  const first = periodStart(range.from, range.interval)
  const step = STEP[range.interval]
  const rows = await queryRows<{ at: string | Date; outcome: string; count: string | number }>(
    db,
    sql`select at, outcome, count from ${sql.identifier(TABLE[range.interval])}
        where key_id = ${key.id}::uuid and at >= ${new Date(first).toISOString()}::timestamptz and at < ${new Date(range.to).toISOString()}::timestamptz`,
  )
  const points = new Map<number, UsagePoint>()
  for (let at = first; at < range.to; at += step) points.set(at, { at: new Date(at).toISOString(), accepted: 0, refused: {} })
  for (const row of rows) {
    const point = points.get(new Date(row.at).getTime())
    if (!point) continue
    const n = Number(row.count)
    if (row.outcome === 'accepted') point.accepted += n
    else point.refused[row.outcome] = (point.refused[row.outcome] ?? 0) + n
  }
  const hours = { from: periodStart(range.from, 'hour'), to: range.to }
  const origins = await refusedInRange(db, key.id, 'origin', hours)
  const ips = await refusedInRange(db, key.id, 'ip', hours)
  const used = await queryRows<{ scope: string; last_used_at: string | Date }>(
    db,
    sql`select scope, last_used_at from key_scope_uses where key_id = ${key.id}::uuid`,
  )
  const lastUse = new Map(used.map((row) => [row.scope, new Date(row.last_used_at).toISOString()]))
  return {
    keyId: key.id,
    from: new Date(range.from).toISOString(),
    to: new Date(range.to).toISOString(),
    interval: range.interval,
    series: [...points.values()],
    refusedOrigins: origins.top.map(({ name, ...row }) => ({ origin: name, ...row })),
    refusedOriginsOther: origins.other,
    refusedIps: ips.top.map(({ name, ...row }) => ({ ip: name, ...row })),
    refusedIpsOther: ips.other,
    scopes: key.scopes.map((scope) => ({ scope, lastUsedAt: lastUse.get(scope) ?? null })),
  }
}

const REFUSALS = {
  origin: { table: 'key_refused_origins', column: 'origin' },
  ip: { table: 'key_refused_ips', column: 'ip' },
} as const

/** The most frequent refused origins (or addresses) of a key's hours in range, and the count of all the others. */
async function refusedInRange(db: Db, keyId: string, kind: keyof typeof REFUSALS, hours: { from: number; to: number }) {
  const table = sql.identifier(REFUSALS[kind].table)
  const within = sql`key_id = ${keyId}::uuid and hour >= ${new Date(hours.from).toISOString()}::timestamptz
    and hour < ${new Date(hours.to).toISOString()}::timestamptz`
  const top = await queryRows<{ name: string; count: string | number; last_seen_at: string | Date; reported: boolean }>(
    db,
    sql`select ${sql.identifier(REFUSALS[kind].column)} as name, reported, sum(count) as count, max(last_seen_at) as last_seen_at
        from ${table} where ${within}
        group by 1, 2
        order by sum(count) desc, 1
        limit ${REFUSALS_SHOWN}`,
  )
  const [total] = await queryRows<{ named: string | number; others: string | number }>(
    db,
    sql`select (select coalesce(sum(count), 0) from ${table} where ${within}) as named,
               (select coalesce(sum(count), 0) from key_refused_others where ${within} and kind = ${kind}) as others`,
  )
  const shown = top.reduce((sum, row) => sum + Number(row.count), 0)
  return {
    top: top.map((row) => ({
      name: row.name,
      count: Number(row.count),
      lastSeenAt: new Date(row.last_seen_at).toISOString(),
      reported: row.reported,
    })),
    other: Number(total?.named ?? 0) + Number(total?.others ?? 0) - shown,
  }
}
