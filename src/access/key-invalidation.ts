import type { Database } from '../../db/client.ts'
import type { ListenOptions } from '../../db/notifications.ts'
import type { Logger } from '../observability/log.ts'
import type { KeyStore } from './key-store.ts'

/** Migration 0001's trigger notifies this channel with the key's digest on every insert, update and delete of api_keys. */
export const KEY_CHANNEL = 'keygate_api_keys'

export type KeyChangeFeedOptions = ListenOptions

export interface KeyChangeFeed {
  /** True while changes reach this instance at once. */
  readonly live: boolean
  /** The notification connection's application_name (PostgreSQL), to find its backend. */
  readonly applicationName: string | null
  close(): Promise<void>
}

/**
 * Keeps the key cache in step with changes made anywhere.
 *
 * PostgreSQL: every instance LISTENs; a notification drops that key from the cache at
 * once (and bumps the store's generation, so a load in flight cannot cache the old row).
 * While listening, cached keys are trusted for the long TTL. When the connection is lost,
 * changes may be missed: the cache is flushed and keys are trusted only for the short
 * TTL until LISTEN is back, when it is flushed again (what changed meanwhile was missed).
 *
 * PGlite: one process owns the database, so every change goes through this process's
 * key service, which invalidates directly; there is nobody to hear from, and the cache is
 * live from the start.
 */
export function feedKeyChanges(database: Database, keyStore: KeyStore, logger: Logger, options: KeyChangeFeedOptions = {}): KeyChangeFeed {
  if (!database.listen) {
    keyStore.setMode('live')
    return { live: true, applicationName: null, close: async () => {} }
  }
  keyStore.setMode('fallback')
  const listener = database.listen(
    KEY_CHANNEL,
    {
      onNotify(hash) {
        keyStore.invalidate(hash)
      },
      onListening() {
        keyStore.setMode('live')
        keyStore.flush()
        logger.info('key change notifications live: cached keys trusted for the long TTL')
      },
      onLost() {
        keyStore.setMode('fallback')
        keyStore.flush()
        logger.warn('key change notifications lost: cache flushed, keys re-read after the short TTL until reconnected')
      },
    },
    options,
  )
  return {
    get live() {
      return listener.listening
    },
    applicationName: listener.applicationName,
    close: () => listener.close(),
  }
}
