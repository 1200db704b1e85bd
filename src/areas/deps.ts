import type { Db } from '../../db/client.ts'
import type { createAccessPlugin } from '../access/plugin.ts'

/** What every area plugin receives from createApp. */
export interface AreaDeps {
  db: Db
  /** The access-chain plugin: `.use(deps.access)` gives routes the `access` option. */
  access: ReturnType<typeof createAccessPlugin>
  /** Registers work to finish before the database closes (buffered writes). */
  onShutdown(task: () => Promise<void>): void
}
