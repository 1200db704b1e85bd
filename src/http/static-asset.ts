import { promisify } from 'node:util'
import { brotliCompress, constants, gzip } from 'node:zlib'

const brotli = promisify(brotliCompress)
const gzipAsync = promisify(gzip)

type Bytes = Uint8Array<ArrayBuffer>

/** The codings an asset is stored in; `identity` is the bytes as they are. */
export type Coding = 'br' | 'gzip' | 'identity'

export interface StaticAssetOptions {
  contentType: string
  /** The default Cache-Control; `serve` may name another for one answer. */
  cacheControl: string
  /**
   * Brotli's quality: 11 (the smallest) unless the file is large, where 11 costs seconds
   * (docs/decisions.md, "Assets served compressed").
   */
  brotliQuality?: number
  /** Sent with every answer of this asset (200, 304 and HEAD alike). */
  headers?: Readonly<Record<string, string>>
}

interface Representation {
  body: Bytes
  etag: string
}

/**
 * One file served as browsers and CDNs expect: compressed by `Accept-Encoding` (brotli,
 * else gzip, else as it is), each coding computed once on the first request that asks for
 * it (start-up pays nothing), a strong ETag per coding, `Vary: Accept-Encoding`, and 304
 * to a matching `If-None-Match`. `load` runs once, on the first request.
 */
export function staticAsset(load: () => Promise<Bytes | string> | Bytes | string, options: StaticAssetOptions) {
  let source: Promise<{ bytes: Bytes; hash: string }> | undefined
  const codings = new Map<Coding, Promise<Representation>>()

  const loaded = () => {
    if (source === undefined) {
      source = (async () => {
        const content = await load()
        const bytes = typeof content === 'string' ? new TextEncoder().encode(content) : content
        return { bytes, hash: new Bun.CryptoHasher('sha256').update(bytes).digest('base64url').slice(0, 22) }
      })()
      // A failed load is tried again by the next request, not kept.
      source.catch(() => (source = undefined))
    }
    return source
  }

  const representation = (coding: Coding): Promise<Representation> => {
    let stored = codings.get(coding)
    if (stored === undefined) {
      stored = loaded().then(async ({ bytes, hash }) => {
        if (coding === 'identity') return { body: bytes, etag: `"${hash}"` }
        const body = coding === 'br' ? await compressBrotli(bytes, options.brotliQuality ?? 11) : await gzipAsync(bytes, { level: 9 })
        return { body: new Uint8Array(body), etag: `"${hash}-${coding === 'br' ? 'br' : 'gz'}"` }
      })
      stored.catch(() => codings.delete(coding))
      codings.set(coding, stored)
    }
    return stored
  }

  return {
    /** The first 22 characters of the content's SHA-256 (base64url): a version for URLs. */
    version: async () => (await loaded()).hash,
    /** The bytes of one coding (for measurements and tests). */
    bytes: async (coding: Coding) => (await representation(coding)).body,
    /** The answer to a GET or HEAD of the asset. */
    async serve(request: Request, cacheControl = options.cacheControl): Promise<Response> {
      const coding = chooseCoding(request.headers.get('accept-encoding'))
      const { body, etag } = await representation(coding)
      const headers: Record<string, string> = {
        ...options.headers,
        'cache-control': cacheControl,
        etag,
        vary: 'Accept-Encoding',
      }
      if (matchesEtag(request.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers })
      headers['content-type'] = options.contentType
      if (coding !== 'identity') headers['content-encoding'] = coding
      return new Response(body, { headers })
    },
  }
}

export type StaticAsset = ReturnType<typeof staticAsset>

function compressBrotli(bytes: Bytes, quality: number) {
  return brotli(bytes, {
    params: {
      [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      [constants.BROTLI_PARAM_QUALITY]: quality,
      [constants.BROTLI_PARAM_SIZE_HINT]: bytes.byteLength,
    },
  })
}

/**
 * The coding to send for an `Accept-Encoding` header (RFC 9110, 12.5.3): the acceptable
 * one with the highest q-value, brotli before gzip before identity on a tie; `*` stands
 * for every coding not named. Identity is sent when nothing else is acceptable (no 406).
 */
export function chooseCoding(acceptEncoding: string | null): Coding {
  if (acceptEncoding === null) return 'identity'
  const weights = new Map<string, number>()
  for (const part of acceptEncoding.split(',')) {
    const [name = '', ...parameters] = part.split(';').map((piece) => piece.trim().toLowerCase())
    if (name === '') continue
    const q = parameters.find((parameter) => /^q\s*=/.test(parameter))
    const weight = q === undefined ? 1 : Number(q.slice(q.indexOf('=') + 1).trim())
    weights.set(name === 'x-gzip' ? 'gzip' : name, Number.isFinite(weight) ? weight : 0)
  }
  // Identity unnamed is acceptable but last choice; `*;q=0` excludes it, and it is sent anyway.
  const weightOf = (coding: Coding) => weights.get(coding) ?? weights.get('*') ?? (coding === 'identity' ? 0.001 : 0)
  let best: Coding = 'identity'
  for (const coding of ['gzip', 'br'] as const) {
    if (weightOf(coding) > 0 && weightOf(coding) >= weightOf(best)) best = coding
  }
  return best
}

/** `If-None-Match` by the weak comparison of RFC 9110 (13.1.2): `W/` is ignored; `*` matches. */
function matchesEtag(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false
  return ifNoneMatch.split(',').some((tag) => {
    const value = tag.trim()
    return value === '*' || value === etag || value === `W/${etag}`
  })
}
