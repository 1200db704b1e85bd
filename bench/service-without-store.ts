/**
 * The service as src/index.ts starts it, with one difference: accepted events go nowhere.
 * `BENCH_ROUTE=track npm run bench` runs it to measure what a page view costs the service
 * up to the database (the key chain, budgets, body, validation, the group commit's queue),
 * against a bare Elysia route that has no database either. Not for anything but benchmarks.
 */
import { startBenchService } from './service-start.ts'

await startBenchService('events stored nowhere', { eventStore: async () => {} })
