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
  refusedIps: { ip: string; count: number; lastSeenAt: string; reported: boolean }[]
  scopes: { scope: string; lastUsedAt: string | null }[]
}

/** The start of the period of `interval` holding `at` (UTC). */
export function periodStart(at: number, interval: UsageInterval): number {
  return at - (at % STEP[interval])
}

/**
 * A key's usage between `from` and `to` (contract section 11): every period of the range
 * in order, zeros included (a chart needs no gap-filling), the 50 most frequent refused
 * origins and client addresses of the range, and each of the key's scopes with its last use.
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
  const origins = await queryRows<{ origin: string; count: string | number; last_seen_at: string | Date; reported: boolean }>(
    db,
    sql`select origin, reported, sum(count) as count, max(last_seen_at) as last_seen_at
        from key_refused_origins
        where key_id = ${key.id}::uuid and hour >= ${new Date(periodStart(range.from, 'hour')).toISOString()}::timestamptz
          and hour < ${new Date(range.to).toISOString()}::timestamptz
        group by origin, reported
        order by sum(count) desc, origin
        limit 50`,
  )
  const ips = await queryRows<{ ip: string; count: string | number; last_seen_at: string | Date; reported: boolean }>(
    db,
    sql`select ip, reported, sum(count) as count, max(last_seen_at) as last_seen_at
        from key_refused_ips
        where key_id = ${key.id}::uuid and hour >= ${new Date(periodStart(range.from, 'hour')).toISOString()}::timestamptz
          and hour < ${new Date(range.to).toISOString()}::timestamptz
        group by ip, reported
        order by sum(count) desc, ip
        limit 50`,
  )
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
    refusedOrigins: origins.map((row) => ({
      origin: row.origin,
      count: Number(row.count),
      lastSeenAt: new Date(row.last_seen_at).toISOString(),
      reported: row.reported,
    })),
    refusedIps: ips.map((row) => ({
      ip: row.ip,
      count: Number(row.count),
      lastSeenAt: new Date(row.last_seen_at).toISOString(),
      reported: row.reported,
    })),
    scopes: key.scopes.map((scope) => ({ scope, lastUsedAt: lastUse.get(scope) ?? null })),
  }
}
