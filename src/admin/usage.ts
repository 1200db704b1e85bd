import { Elysia, t } from 'elysia'
import type { Db } from '../../db/client.ts'
import { isoTime, parseTime } from '../shared/time.ts'
import { invalidField } from '../shared/validation.ts'
import type { KeyService } from '../keys/service.ts'
import { MAX_RANGE, USAGE_INTERVALS, usageReport, type UsageInterval } from '../usage/report.ts'
import { IdParams } from './model.ts'

const DateTime = (what: string) => t.Optional(isoTime(what))

const UsageQuery = t.Object({
  from: DateTime('Start of the range (default: 24 hours before `to`).'),
  to: DateTime('End of the range, exclusive (default: now).'),
  // A pattern, not UnionEnum: Elysia fills an absent optional UnionEnum with its first value.
  interval: t.Optional(
    t.String({
      pattern: `^(${USAGE_INTERVALS.join('|')})$`,
      error: 'must be "minute", "hour" or "day"',
      description: 'minute, hour or day (default hour).',
    }),
  ),
})

export const UsageSchema = t.Object({
  keyId: t.String(),
  from: t.String({ format: 'date-time' }),
  to: t.String({ format: 'date-time' }),
  interval: t.UnionEnum(USAGE_INTERVALS),
  series: t.Array(
    t.Object({
      at: t.String({ format: 'date-time' }),
      accepted: t.Integer(),
      refused: t.Record(t.String(), t.Integer(), { description: 'Requests answered with each error code.' }),
    }),
  ),
  refusedOrigins: t.Array(
    t.Object({
      origin: t.String(),
      count: t.Integer(),
      lastSeenAt: t.String({ format: 'date-time' }),
      reported: t.Boolean({ description: 'Served anyway: the key was report-only.' }),
    }),
    { description: 'The 50 most frequent origins refused (or reported) in the range.' },
  ),
  refusedOriginsOther: t.Integer({
    description:
      'Requests refused (or reported) for their origin in the range whose origin is not listed above: beyond the 50, or one of the rarer origins of an hour that saw more than 100.',
  }),
  refusedIps: t.Array(
    t.Object({
      ip: t.String({ description: 'The client address as seen.' }),
      count: t.Integer(),
      lastSeenAt: t.String({ format: 'date-time' }),
      reported: t.Boolean({ description: 'Served anyway: the key was report-only (ipPolicy).' }),
    }),
    { description: "Private keys: the 50 most frequent client addresses outside the key's allowedIps." },
  ),
  refusedIpsOther: t.Integer({ description: 'Requests refused (or reported) for their client address whose address is not listed above.' }),
  scopes: t.Array(t.Object({ scope: t.String(), lastUsedAt: t.Nullable(t.String({ format: 'date-time' })) })),
})

/** A key's requests per period, refused origins and scope use. */
export function usageRoutes({ db, keys }: { db: Db; keys: KeyService }) {
  return new Elysia({ name: 'admin/usage' }).get(
    '/keys/:id/usage',
    async ({ params, query }) => {
      const key = await keys.get(null, params.id)
      return usageReport(db, key, usageRange({ ...query, interval: query.interval as UsageInterval | undefined }))
    },
    {
      params: IdParams,
      query: UsageQuery,
      response: UsageSchema,
      detail: { summary: "A key's usage: accepted and refused requests per period, refused origins, scopes' last use" },
    },
  )
}

/** The range a query asks for, checked: `from` before `to`, and no longer than that interval keeps. */
export function usageRange(query: { from?: string; to?: string; interval?: UsageInterval }, now = Date.now()) {
  const interval = query.interval ?? 'hour'
  const to = query.to ? parseTime(query.to, 'to', 'query').getTime() : now
  const from = query.from ? parseTime(query.from, 'from', 'query').getTime() : to - 86_400_000
  if (!(from < to)) throw invalidField('from', 'it must be before "to"', 'query')
  if (to - from > MAX_RANGE[interval]) {
    throw invalidField(
      'from',
      `a range by ${interval} covers at most ${MAX_RANGE[interval] / 86_400_000} days (what is kept at that resolution); ask by a longer interval`,
      'query',
    )
  }
  return { from, to, interval }
}
