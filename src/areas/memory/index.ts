import { Elysia } from 'elysia'
import { noContent } from '../../http/openapi-document.ts'
import type { AreaDeps } from '../deps.ts'
import { pageSize } from '../../shared/paging.ts'
import { assertStorableJson, IdParams, strictBody } from '../../shared/validation.ts'
import { DocumentChanges, ListQuery, MAX_METADATA_BYTES, MEMORY_PAGE_DEFAULT, MemoryDocument, MemoryPage, NewDocument } from './model.ts'
import { createDocument, deleteDocument, getDocument, listDocuments, updateDocument } from './service.ts'

const READ = { scope: 'MEMORY_READ', public: false } as const
const WRITE = { scope: 'MEMORY_WRITE', public: false } as const

const newDocument = strictBody(NewDocument)
const documentChanges = strictBody(DocumentChanges)

/** The checks of the body as sent, then the limits a schema cannot state for free-form JSON. */
function checkBody(strict: typeof newDocument | typeof documentChanges) {
  return function checkDocumentBody({ body }: { body: unknown }) {
    strict.check({ body })
    // The strict check above has established that the body is a document object.
    const { metadata } = body as { metadata?: unknown }
    if (metadata !== undefined) assertStorableJson(metadata, 'metadata', MAX_METADATA_BYTES)
  }
}

/**
 * Memory documents: text a backend stores and finds again by full-text search. Private
 * keys only (no route here is in the public set); every query is scoped to the key's
 * business.
 */
export function memoryRoutes({ db, keyChain }: AreaDeps) {
  return new Elysia({ name: 'area/memory', prefix: '/api/v0/memory', detail: { tags: ['memory'] } })
    .use(keyChain)
    .post(
      '',
      async ({ body, set, grant: { key } }) => {
        const document = await createDocument(db, key.businessId, body)
        set.status = 201
        return document
      },
      {
        access: WRITE,
        body: newDocument.schema,
        transform: checkBody(newDocument),
        response: { 201: MemoryDocument },
        detail: { summary: 'Store a document' },
      },
    )
    .get(
      '',
      ({ query, grant: { key } }) =>
        listDocuments(db, key.businessId, {
          q: query.q,
          cursor: query.cursor,
          limit: pageSize(query.limit, MEMORY_PAGE_DEFAULT),
        }),
      {
        access: READ,
        query: ListQuery,
        response: MemoryPage,
        detail: { summary: 'List documents, newest first, or search them with `q` (ranked by relevance)' },
      },
    )
    .get('/:id', ({ params, grant: { key } }) => getDocument(db, key.businessId, params.id), {
      access: READ,
      params: IdParams,
      response: MemoryDocument,
      detail: { summary: 'Show a document' },
    })
    .patch('/:id', ({ params, body, grant: { key } }) => updateDocument(db, key.businessId, params.id, body), {
      access: WRITE,
      params: IdParams,
      body: documentChanges.schema,
      transform: checkBody(documentChanges),
      response: MemoryDocument,
      detail: { summary: 'Change a document; metadata, when sent, replaces the stored object' },
    })
    .delete(
      '/:id',
      async ({ params, set, grant: { key } }) => {
        await deleteDocument(db, key.businessId, params.id)
        set.status = 204
        return null
      },
      { access: WRITE, params: IdParams, detail: { summary: 'Delete a document', ...noContent('Deleted') } },
    )
}
