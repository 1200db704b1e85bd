import { ApiError } from '../errors.ts'
import { parseJsonBody } from './json-body.ts'

export const MAX_BODY_BYTES = 1024 * 1024

/**
 * A public key's bodies: what one page sends (the snippet's batches stay under 60,000 bytes,
 * the browsers' keepalive limit). A public key is in every visitor's page, so its bodies are
 * anyone's: a megabyte each from many addresses filled memory and the event store
 * (docs/decisions.md, "Public keys under a flood from many addresses").
 */
export const MAX_PUBLIC_BODY_BYTES = 64 * 1024

/** The most a body may hold for a key of this type. */
export function bodyLimitOf(keyType: 'public' | 'private'): number {
  return keyType === 'public' ? MAX_PUBLIC_BODY_BYTES : MAX_BODY_BYTES
}

/** A Content-Type that says JSON (`application/json`, with or without parameters). */
export const JSON_CONTENT_TYPE = /^application\/json\s*(;|$)/i

/**
 * The body of an /api/v0 request, after the key checks (an anonymous caller learns nothing)
 * and before parsing: 413 over the key's limit (`bodyLimitOf`: 1 MiB, 64 KiB for public keys),
 * from Content-Length before reading and while reading a body without one (chunked), 415
 * for anything but JSON. src/http/json-body.ts parses it,
 * refusing deep nesting before JSON.parse and strings PostgreSQL cannot store. No body at
 * all is null.
 */
export async function readApiBody(request: Request, limit = MAX_BODY_BYTES): Promise<unknown> {
  const text = await readApiText(request, limit)
  return text === null ? null : parseJsonBody(text)
}

/**
 * readApiBody's checks and the body's text, not yet parsed: for a caller with work between
 * the two (src/http/direct-route.ts checks the route's room again before parsing).
 */
export async function readApiText(request: Request, limit = MAX_BODY_BYTES): Promise<string | null> {
  const length = request.headers.get('content-length')
  // `request.body` is read only without a Content-Length (a chunked body, or a Request made
  // in this process, as under app.handle): in Bun, reading it turns the body into a stream
  // that text() then goes through (bench/README.md, "Bodies read without a stream").
  if (length === null ? request.body === null : length === '0') return null
  if (length !== null && Number(length) > limit) throw tooLarge(`${length} bytes`, limit)
  const type = request.headers.get('content-type')
  if (type === null || !JSON_CONTENT_TYPE.test(type)) {
    throw new ApiError(
      'unsupported_media_type',
      `The body was sent as ${type ?? 'no Content-Type'}; send JSON with the header "Content-Type: application/json".`,
    )
  }
  return length === null ? readTextWithin(request.body!, limit) : request.text()
}

async function readTextWithin(stream: ReadableStream<Uint8Array>, limit: number): Promise<string> {
  return (await readBytesWithin(stream, limit)).toString('utf8')
}

async function readBytesWithin(stream: ReadableStream<Uint8Array>, limit: number): Promise<Buffer> {
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of stream) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge('more than that', limit)
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
  if (length !== null && Number(length) > MAX_BODY_BYTES) throw tooLarge(`${length} bytes`, MAX_BODY_BYTES)
  if (length !== null || request.body === null) return Buffer.from(await request.arrayBuffer())
  return readBytesWithin(request.body, MAX_BODY_BYTES)
}

function tooLarge(seen: string, limit: number): ApiError {
  const which = limit === MAX_PUBLIC_BODY_BYTES ? '64 KiB, for public keys' : '1 MiB'
  return new ApiError(
    'payload_too_large',
    `The body has ${seen}; the limit is ${limit} bytes (${which}). Send fewer events or records per request.`,
  )
}
