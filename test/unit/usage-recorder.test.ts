import { describe, expect, test } from 'bun:test'
import type { Db } from '../../db/client.ts'
import { createUsageRecorder } from '../../src/usage/recorder.ts'

// The recorder's memory bound and its failed flushes, with a database that refuses writes
// (test/api/usage.test.ts covers what reaches a real one).
const refusing = { transaction: async () => Promise.reject(new Error('down')) } as unknown as Db
const MINUTE = 60_000

describe('the usage recorder', () => {
  test('holds at most maxEntries counters: past that, requests are counted as dropped, not kept', async () => {
    const usage = createUsageRecorder(refusing, { maxEntries: 2, flushIntervalMs: 3_600_000, onError: () => {} })
    const at = 10 * MINUTE
    usage.accepted('key-a', null, at)
    usage.accepted('key-b', null, at)
    usage.accepted('key-a', 'ANALYTICS_WRITE', at + 1)
    expect(usage.stats.dropped).toBe(0)
    usage.accepted('key-c', null, at)
    usage.refused('key-d', 'origin_not_allowed', at)
    expect(usage.stats.dropped).toBe(2)
    // A new minute of a known key takes a slot too: it is refused at the bound as well.
    usage.accepted('key-a', null, at + MINUTE)
    expect(usage.stats.dropped).toBe(3)
    await usage.close()
  })

  test('a failed flush keeps its counts for the next one, within the bound', async () => {
    let attempts = 0
    const written: unknown[] = []
    const flaky = {
      transaction: async (work: (tx: unknown) => Promise<void>) => {
        attempts++
        if (attempts === 1) throw new Error('down')
        await work({ execute: async (statement: unknown) => void written.push(statement) })
      },
      execute: async () => {},
    } as unknown as Db
    const errors: unknown[] = []
    const usage = createUsageRecorder(flaky, { flushIntervalMs: 3_600_000, onError: (e) => errors.push(e) })
    usage.accepted('2b1f7c52-0000-4000-8000-000000000001', 'ANALYTICS_WRITE', 5 * MINUTE)
    await usage.flush()
    expect(errors).toHaveLength(1)
    expect(written).toHaveLength(0)
    await usage.flush()
    // Three resolutions of counts and the scope's last use.
    expect(written).toHaveLength(4)
    await usage.close()
  })
})
