/**
 * The benches' synthetic event store: typical page views of several businesses in turn,
 * spread over the last `days` days in time order as they arrive (row `g` of `total` at
 * its share of the span), so the indexes grow at their right edge as they do in service,
 * with time-ordered ids like the service's UUIDv7. One statement inserts rows
 * `from` .. `from + count - 1`; a tenth of each business's are `signup`, the rest
 * `page_view` (before bench/store-growth.ts, the type followed the business: the first
 * business's events were all signups).
 */
export function fillEvents(options: {
  from: number
  count: number
  total: number
  days: number
  keyId: string
  businesses: readonly string[]
}): string {
  const { from, count, total, days, keyId, businesses } = options
  const ids = `array[${businesses.map((b) => `'${b}'::uuid`).join(',')}]`
  return `insert into analytics_events (id, business_id, key_id, origin, event_type, url, referrer, anonymous_id, person_id, properties, occurred_at, received_at)
    select (lpad(to_hex((extract(epoch from t) * 1000)::bigint), 12, '0') || '7' || substr(md5(g::text), 1, 19))::uuid,
      (${ids})[1 + g % ${businesses.length}], '${keyId}'::uuid, 'https://www.example.com',
      case when (g / ${businesses.length}) % 10 = 0 then 'signup' else 'page_view' end,
      'https://www.example.com/blog/post-' || (g % 500), case when g % 3 = 0 then 'https://www.google.com/' end,
      md5((g / 7)::text), null, jsonb_build_object('title', 'Post ' || (g % 500)), t, t
    from generate_series(${from}, ${from + count - 1}) g,
      lateral (select now() - interval '${days} days' + (g::float8 / ${total}) * interval '${days} days' as t) at`
}
