/**
 * `bun bench/recent-map.ts`: nanoseconds per lookup of the hot path's bounded maps
 * (src/access/recent-map.ts) against lru-cache, which they replaced, at 10,000 and
 * 100,000 entries: a hit on one hot key (a site's public key), hits spread over every
 * entry (100,000 visitors' budgets), and a miss-and-insert past the bound. The same
 * keys, in the same order, for each, in one run; medians of 5 repetitions.
 */
import { LRUCache } from 'lru-cache'
import { RecentMap } from '../src/access/recent-map.ts'
import { median } from './measure.ts'

interface BoundedMap {
  get(key: string): { tat: number } | undefined
  set(key: string, value: { tat: number }): void
}

const makers: Record<string, (max: number) => BoundedMap> = {
  'lru-cache (before)': (max) => new LRUCache<string, { tat: number }>({ max }),
  'lru-cache with a TTL, as the key store used it (before)': (max) => new LRUCache<string, { tat: number }>({ max, ttl: 60_000 }),
  RecentMap: (max) => new RecentMap<string, { tat: number }>(max),
}

const LOOKUPS = 2_000_000

function run(map: BoundedMap, keys: readonly string[], pattern: 'one hot key' | 'every entry' | 'misses'): number {
  let sink = 0
  const t0 = Bun.nanoseconds()
  for (let i = 0; i < LOOKUPS; i++) {
    const key = pattern === 'one hot key' ? keys[0]! : keys[(i * 7919) % keys.length]!
    let cell = pattern === 'misses' ? undefined : map.get(key)
    if (cell === undefined) {
      cell = { tat: i }
      map.set(pattern === 'misses' ? `${key}:${i}` : key, cell)
    }
    sink += cell.tat
  }
  const ns = (Bun.nanoseconds() - t0) / LOOKUPS
  if (sink === -1) console.log(sink)
  return ns
}

console.log(`bun ${Bun.version}; ns per lookup, ${LOOKUPS.toLocaleString('en')} lookups, median of 5\n`)
console.log('| Entries | Pattern | ' + Object.keys(makers).join(' | ') + ' |')
console.log(
  '|---|---|' +
    Object.keys(makers)
      .map(() => '---|')
      .join(''),
)
for (const size of [10_000, 100_000]) {
  const keys = Array.from({ length: size }, (_, i) => `6b82d88b-9797-45c3-9b8a-${String(i).padStart(12, '0')} 203.0.113.${i % 256}`)
  for (const pattern of ['one hot key', 'every entry', 'misses'] as const) {
    const cells: string[] = []
    for (const make of Object.values(makers)) {
      const times: number[] = []
      for (let repetition = 0; repetition < 5; repetition++) {
        const map = make(size)
        for (const key of keys) map.set(key, { tat: 0 })
        times.push(run(map, keys, pattern))
      }
      cells.push(median(times).toFixed(0))
    }
    console.log(`| ${size.toLocaleString('en')} | ${pattern} | ${cells.join(' | ')} |`)
  }
}
