import { ApiError } from '../errors.ts'
import { parseJsonBody } from './json-body.ts'

export const MAX_BODY_BYTES = 1024 * 1024

/** A Content-Type that says JSON (`application/json`, with or without parameters). */
export const JSON_CONTENT_TYPE = /^application\/json\s*(;|$)/i

/**
 * The body of an /api/v0 request, after the key checks (an anonymous caller learns nothing)
 * and before parsing: 413 over 1 MiB, 415 for anything but JSON. A body without a
 * Content-Length (chunked) is read only up to the limit. src/http/json-body.ts parses it,
 * refusing deep nesting before JSON.parse and strings PostgreSQL cannot store. No body at
 * all is null.
 */
export function readApiBody(request: Request): null | Promise<unknown> {
  const text = readApiText(request)
  // One promise for the text, parsed in its callback: no async frame of its own.
  return text === null ? null : text.then(parseJsonBody)
}

/**
 * readApiBody's checks and the body's text, not yet parsed: for a caller with work between
 * the two (src/http/direct-route.ts checks the route's room again before parsing).
 */
export function readApiText(request: Request): null | Promise<string> {
  const length = request.headers.get('content-length')
  // `request.body` is read only without a Content-Length (a chunked body, or a Request made
  // in this process, as under app.handle): in Bun, reading it turns the body into a stream
  // that text() then goes through (bench/README.md, "Bodies read without a stream").
  if (length === null ? request.body === null : length === '0') return null
  if (length !== null && Number(length) > MAX_BODY_BYTES) throw tooLarge(`${length} bytes`)
  const type = request.headers.get('content-type')
  if (type === null || !JSON_CONTENT_TYPE.test(type)) {
    throw new ApiError(
      'unsupported_media_type',
      `The body was sent as ${type ?? 'no Content-Type'}; send JSON with the header "Content-Type: application/json".`,
    )
  }
  return length === null ? readTextWithin(request.body!, MAX_BODY_BYTES) : request.text()
}

async function readTextWithin(stream: ReadableStream<Uint8Array>, limit: number): Promise<string> {
  return (await readBytesWithin(stream, limit)).toString('utf8')
}

async function readBytesWithin(stream: ReadableStream<Uint8Array>, limit: number): Promise<Buffer> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of stream) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge('more than that')
    chunks.push(chunk)
  }
  return Buffer.concat(chunks)
}

/**
 * Any body, read only up to 1 MiB (the dashboard's forms; the API's and the admin API's
 * go through readApiText), so that
 * the socket's own limit (src/http/server-options.ts) can sit far above every body a route
 * takes, and a body over 1 MiB is this 413 with the error envelope, not the socket's bare one.
 */
export async function readBodyBytes(request: Request): Promise<Buffer> {
  const length = request.headers.get('content-length')
  if (length !== null && Number(length) > MAX_BODY_BYTES) throw tooLarge(`${length} bytes`)
  if (length !== null || request.body === null) return Buffer.from(await request.arrayBuffer())
  return readBytesWithin(request.body, MAX_BODY_BYTES)
}

function tooLarge(seen: string): ApiError {
  return new ApiError(
    'payload_too_large',
    `The body has ${seen}; the limit is ${MAX_BODY_BYTES} bytes (1 MiB). Send fewer events or records per request.`,
  )
}
