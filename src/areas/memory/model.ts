import { t } from 'elysia'
import { CursorQuery, limitQuery, pageSchema } from '../../shared/paging.ts'
import { JsonObject, MAX_JSON_FIELD_BYTES, Text } from '../../shared/validation.ts'

export const MEMORY_PAGE_DEFAULT = 20
export const MAX_METADATA_BYTES = MAX_JSON_FIELD_BYTES

const Metadata = JsonObject(
  50,
  `Your own attributes: a JSON object, at most 50 top-level properties, 8 levels deep, ${MAX_METADATA_BYTES / 1024} KiB. Not searched.`,
)

const documentFields = {
  title: t.Optional(
    t.Nullable(Text({ minLength: 1, maxLength: 300, description: 'Searched, and weighs more than content in the ranking.' })),
  ),
  content: Text({ minLength: 1, maxLength: 100_000, description: 'The text to remember; searched.' }),
  metadata: t.Optional(Metadata),
}

export const NewDocument = t.Object(documentFields)
export const DocumentChanges = t.Partial(t.Object(documentFields), {
  minProperties: 1,
  error: 'must change at least one field (title, content, metadata)',
})

export const ListQuery = t.Object({
  q: t.Optional(
    Text({
      minLength: 1,
      maxLength: 500,
      description:
        'Full-text search (PostgreSQL websearch syntax: words, "quoted phrases", or, -excluded). Results are ranked by relevance, title matches first.',
    }),
  ),
  limit: limitQuery({ default: MEMORY_PAGE_DEFAULT, max: 100 }),
  cursor: CursorQuery,
})

export const MemoryDocument = t.Object({
  id: t.String(),
  title: t.Nullable(t.String()),
  content: t.String(),
  metadata: t.Record(t.String(), t.Unknown()),
  createdAt: t.String(),
  updatedAt: t.String(),
  rank: t.Optional(t.Number({ description: 'Relevance to `q` (search results only); higher is better.' })),
})

export const MemoryPage = pageSchema(MemoryDocument)

export type NewDocumentInput = typeof NewDocument.static
export type DocumentChangesInput = typeof DocumentChanges.static
export type DocumentRecord = typeof MemoryDocument.static
