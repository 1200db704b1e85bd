import { eq } from 'drizzle-orm'
import type { Db } from '../../db/client.ts'
import { businesses } from '../../db/schema/index.ts'
import { ApiError } from '../errors.ts'

/** 404 unless the business exists: the admin routes that take one check it first. */
export async function requireBusiness(db: Db, id: string): Promise<void> {
  const [row] = await db.select({ id: businesses.id }).from(businesses).where(eq(businesses.id, id))
  if (!row) throw new ApiError('not_found', `No business with id ${id}.`)
}
