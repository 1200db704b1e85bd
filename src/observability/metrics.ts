/**
 * Prometheus counters for the service, kept as plain numbers and arrays: the request path
 * only increments (one Map lookup for the route, array slots for method, status and
 * bucket); the text exposition is built only when /metrics is scraped. prom-client would
 * build label keys per increment (bench/README.md, "Metrics as plain counters").
 */

/** Upper bounds (seconds) of the request-duration histogram's buckets. */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5] as const

/** Label for requests that matched no declared route: the raw path never becomes a label. */
export const UNMATCHED_ROUTE = 'unmatched'

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'OTHER'] as const
const OTHER_METHOD = METHODS.length - 1

/** The chain's refusal codes, each a series from the first scrape on. */
export const AUTH_REFUSAL_CODES = [
  'missing_api_key',
  'malformed_api_key',
  'invalid_api_key',
  'expired_api_key',
  'origin_not_allowed',
  'ip_not_allowed',
  'public_key_not_allowed',
  'insufficient_scope',
] as const
export type AuthRefusalCode = (typeof AUTH_REFUSAL_CODES)[number]

export interface IngestFigures {
  /** Event rows accepted by the queue and not committed yet. */
  queuedRows: number
  /** Event rows committed since start. */
  committedRows: number
}

/** Lookups of src/access/key-store.ts since start, by result. Plain increments on the request path. */
export interface KeyCacheStats {
  /** A known key answered from the cache. */
  hit: number
  /** An unknown digest answered from the negative cache. */
  negative: number
  /** Read from the database (a request that joined a load already in flight counts too). */
  miss: number
}

/** What a background writer (usage, lastUsedAt: db/background-writes.ts) reports, read at scrape time. */
export interface BackgroundWriteFigures {
  /** Rows written. */
  written: number
  /** Writes that failed (each try). */
  failures: number
  /** Rows given up on after their last retry. */
  dropped: number
  /** Rows waiting for a retry. */
  waiting: number
}

/** Counts of one (route, method): statuses 100-599 by slot, and the duration histogram. */
interface RouteSeries {
  readonly statuses: Float64Array
  readonly buckets: Float64Array
  sum: number
  count: number
}

export interface Metrics {
  /** One answered request; `route` as declared (or UNMATCHED_ROUTE), never the raw path. */
  recordRequest(method: string, route: string, status: number, seconds: number): void
  /** One request refused by the key chain; `code` is one of a closed set (src/errors.ts). */
  authRefused(code: string): void
  /** For the rate limiter: one request answered 429 `rate_limited`. */
  rateLimited(keyType: 'public' | 'private'): void
  /** Where the key cache's lookup counts are read at scrape time. */
  readKeyCache(source: () => Readonly<KeyCacheStats>): void
  /** Where the ingest queue's figures are read at scrape time (the ingest module re-points this). */
  readIngest(source: () => IngestFigures): void
  /** Where the background writers' figures are read at scrape time, by writer name. */
  readBackgroundWrites(source: () => Record<string, Readonly<BackgroundWriteFigures>>): void
  /** The text exposition (format 0.0.4). */
  render(): string
}

export function createMetrics(): Metrics {
  const routes = new Map<string, (RouteSeries | undefined)[]>()
  const refusals = new Map<string, number>(AUTH_REFUSAL_CODES.map((code) => [code, 0]))
  const limited = { public: 0, private: 0 }
  let keyCache: () => Readonly<KeyCacheStats> = () => ({ hit: 0, negative: 0, miss: 0 })
  let ingest: () => IngestFigures = () => ({ queuedRows: 0, committedRows: 0 })
  let background: () => Record<string, Readonly<BackgroundWriteFigures>> = () => ({})

  function seriesOf(route: string, method: number): RouteSeries {
    let byMethod = routes.get(route)
    if (byMethod === undefined) routes.set(route, (byMethod = []))
    let series = byMethod[method]
    if (series === undefined) {
      series = { statuses: new Float64Array(500), buckets: new Float64Array(DURATION_BUCKETS.length), sum: 0, count: 0 }
      byMethod[method] = series
    }
    return series
  }

  return {
    recordRequest(method, route, status, seconds) {
      const series = seriesOf(route, methodSlot(method))
      if (status >= 100 && status < 600) series.statuses[status - 100]!++
      let bucket = 0
      while (bucket < DURATION_BUCKETS.length && seconds > DURATION_BUCKETS[bucket]!) bucket++
      if (bucket < DURATION_BUCKETS.length) series.buckets[bucket]!++
      series.sum += seconds
      series.count++
    },
    authRefused(code) {
      refusals.set(code, (refusals.get(code) ?? 0) + 1)
    },
    rateLimited(keyType) {
      limited[keyType]++
    },
    readKeyCache(source) {
      keyCache = source
    },
    readIngest(source) {
      ingest = source
    },
    readBackgroundWrites(source) {
      background = source
    },
    render() {
      const out: string[] = []
      const requests: string[] = []
      const durations: string[] = []
      for (const [route, byMethod] of routes) {
        byMethod.forEach((series, method) => {
          if (series === undefined) return
          const labels = `route="${escapeLabel(route)}",method="${METHODS[method]}"`
          series.statuses.forEach((count, slot) => {
            if (count > 0) requests.push(`keygate_http_requests_total{${labels},status="${slot + 100}"} ${count}`)
          })
          let cumulative = 0
          DURATION_BUCKETS.forEach((bound, index) => {
            cumulative += series.buckets[index]!
            durations.push(`keygate_http_request_duration_seconds_bucket{${labels},le="${bound}"} ${cumulative}`)
          })
          durations.push(`keygate_http_request_duration_seconds_bucket{${labels},le="+Inf"} ${series.count}`)
          durations.push(`keygate_http_request_duration_seconds_sum{${labels}} ${series.sum}`)
          durations.push(`keygate_http_request_duration_seconds_count{${labels}} ${series.count}`)
        })
      }
      family(out, 'keygate_http_requests_total', 'counter', 'HTTP requests answered, by declared route, method and status.', requests)
      family(
        out,
        'keygate_http_request_duration_seconds',
        'histogram',
        'Time from receiving a request until its answer is ready.',
        durations,
      )
      family(
        out,
        'keygate_auth_refusals_total',
        'counter',
        'API requests refused by the key chain, by error code.',
        [...refusals].map(([code, count]) => `keygate_auth_refusals_total{code="${code}"} ${count}`),
      )
      family(out, 'keygate_rate_limited_total', 'counter', 'API requests answered 429 rate_limited, by key type.', [
        `keygate_rate_limited_total{key_type="public"} ${limited.public}`,
        `keygate_rate_limited_total{key_type="private"} ${limited.private}`,
      ])
      const cache = keyCache()
      family(out, 'keygate_key_cache_lookups_total', 'counter', 'Key lookups by the request chain, by cache result.', [
        `keygate_key_cache_lookups_total{result="hit"} ${cache.hit}`,
        `keygate_key_cache_lookups_total{result="negative"} ${cache.negative}`,
        `keygate_key_cache_lookups_total{result="miss"} ${cache.miss}`,
      ])
      const queue = ingest()
      family(out, 'keygate_ingest_queue_rows', 'gauge', 'Analytics event rows waiting to be committed.', [
        `keygate_ingest_queue_rows ${queue.queuedRows}`,
      ])
      family(out, 'keygate_ingest_rows_total', 'counter', 'Analytics event rows committed.', [
        `keygate_ingest_rows_total ${queue.committedRows}`,
      ])
      const writers = Object.entries(background())
      const perWriter = (pick: (figures: Readonly<BackgroundWriteFigures>) => number, name: string) =>
        writers.map(([writer, figures]) => `${name}{writer="${writer}"} ${pick(figures)}`)
      family(
        out,
        'keygate_background_write_failures_total',
        'counter',
        'Background writes (usage, lastUsedAt) that failed or timed out; each is retried in smaller batches.',
        perWriter((f) => f.failures, 'keygate_background_write_failures_total'),
      )
      family(
        out,
        'keygate_background_rows_dropped_total',
        'counter',
        'Background rows given up on after their last retry.',
        perWriter((f) => f.dropped, 'keygate_background_rows_dropped_total'),
      )
      family(
        out,
        'keygate_background_rows_waiting',
        'gauge',
        'Background rows waiting for a retry.',
        perWriter((f) => f.waiting, 'keygate_background_rows_waiting'),
      )
      return out.join('\n') + '\n'
    },
  }
}

/** The method as a label: one of the standard ones, else `OTHER` (a client may send anything there). */
export function methodLabel(method: string): string {
  return METHODS[methodSlot(method)]!
}

function methodSlot(method: string): number {
  switch (method) {
    case 'GET':
      return 0
    case 'HEAD':
      return 1
    case 'POST':
      return 2
    case 'PUT':
      return 3
    case 'PATCH':
      return 4
    case 'DELETE':
      return 5
    case 'OPTIONS':
      return 6
    default:
      // Any other method a client invents shares one label: labels stay bounded.
      return OTHER_METHOD
  }
}

function family(out: string[], name: string, type: string, help: string, samples: string[]): void {
  out.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, ...samples)
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')
}
