import { describe, expect, test } from 'bun:test'
import type { Database } from '../../db/client.ts'
import type { ListenHandlers, ListenOptions } from '../../db/notifications.ts'
import { feedKeyChanges, KEY_CHANNEL } from '../../src/access/key-invalidation.ts'
import type { KeyStore } from '../../src/access/key-store.ts'
import type { Logger } from '../../src/observability/log.ts'

// The key cache's feed of changes, on a database stand-in: what the store is told on each
// notification, on listening and on a lost connection, and what is logged.
// test/api/invalidation.test.ts runs two instances over PostgreSQL's LISTEN/NOTIFY.

function recorder() {
  const calls: string[] = []
  const keyStore = {
    setMode: (mode: string) => void calls.push(`mode ${mode}`),
    invalidate: (hash: string) => void calls.push(`invalidate ${hash}`),
    flush: () => void calls.push('flush'),
  } as unknown as KeyStore
  const logger: Logger = {
    info: (line) => void calls.push(`info ${line}`),
    warn: (line) => void calls.push(`warn ${line}`),
    error: (line) => void calls.push(`error ${line}`),
  }
  return { calls, keyStore, logger }
}

describe('feedKeyChanges', () => {
  test('without LISTEN (PGlite, one process): the cache is live at once, with nobody to hear from', async () => {
    const { calls, keyStore, logger } = recorder()
    const feed = feedKeyChanges({ engine: 'pglite' } as Database, keyStore, logger)
    expect(calls).toEqual(['mode live'])
    expect(feed.live).toBe(true)
    expect(feed.applicationName).toBeNull()
    await feed.close()
  })

  test('with LISTEN: short trust until listening; each change drops its key; a loss flushes and shortens the trust again', async () => {
    const { calls, keyStore, logger } = recorder()
    let handlers: ListenHandlers | undefined
    let listening = false
    let closed = 0
    const given: { channel: string; options: ListenOptions | undefined }[] = []
    const database = {
      engine: 'postgres',
      listen(channel: string, on: ListenHandlers, options?: ListenOptions) {
        handlers = on
        given.push({ channel, options })
        return {
          get listening() {
            return listening
          },
          applicationName: 'keygate-listen-1',
          close: async () => void closed++,
        }
      },
    } as unknown as Database
    const feed = feedKeyChanges(database, keyStore, logger, { heartbeatMs: 500 })
    expect(given).toEqual([{ channel: KEY_CHANNEL, options: { heartbeatMs: 500 } }])
    expect(calls).toEqual(['mode fallback'])
    expect(feed.applicationName).toBe('keygate-listen-1')
    expect(feed.live).toBe(false)

    listening = true
    handlers!.onListening()
    expect(feed.live).toBe(true)
    handlers!.onNotify('digest-1')
    listening = false
    handlers!.onLost(new Error('connection reset'))
    expect(feed.live).toBe(false)
    expect(calls).toEqual([
      'mode fallback',
      'mode live',
      'flush',
      'info key change notifications live: cached keys trusted for the long TTL',
      'invalidate digest-1',
      'mode fallback',
      'flush',
      'warn key change notifications lost: cache flushed, keys re-read after the short TTL until reconnected',
    ])
    await feed.close()
    expect(closed).toBe(1)
  })
})
