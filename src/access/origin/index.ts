/**
 * Allowed origins of public keys.
 *
 * Two sides with different rules:
 * - Entries are typed by people: they are trimmed, lower-cased, IDN-converted and stripped
 *   of one trailing "/", then validated strictly and stored in one canonical form.
 * - The request's Origin header is never repaired: it matches only when it is exactly the
 *   serialized origin a browser sends, `scheme://host[:port]` in lower case.
 *
 * Every entry is validated by hand before any library sees it, because WHATWG URL and
 * tldts silently repair inputs the contract refuses (`ex%41mple.com`, `127.1`, `a..b`).
 * tldts is only asked to classify an already valid hostname, and only outside `match()`.
 *
 * The parts: entry.ts parses entries (src/shared/ip.ts holds the IP literal rules),
 * match.ts compiles a key's entries and matches request origins, explain.ts
 * says why an origin was refused.
 *
 * Interpretations (the contract is silent on these):
 * - Full forms keep their default port implicit: `http://localhost:80` is stored as
 *   `http://localhost`, so `http://localhost` and `http://127.0.0.1` are valid full forms
 *   (port 80). "localhost without a port" refers to the bare `localhost` entry.
 * - Hosts must be a registrable domain or below it in every form; a public suffix or an
 *   unknown suffix (`.local`, `.test`, `.internal`, `foo.localhost`) is refused even as
 *   `https://github.io`. Only `localhost` and IP literals live outside the suffix list.
 * - `_` is accepted inside labels (browsers send such hosts); IPv6 is accepted in
 *   brackets in the full form and stored in its WHATWG serialization.
 * - An Origin with an explicit default port (`https://example.com:443`) is not a
 *   serialization a browser produces, so it matches nothing but `*`.
 */
export {
  parseAllowedOrigin,
  parseAllowedOrigins,
  type ParseOriginResult,
  type ParseOriginsResult,
} from './entry.ts'
export { compileOriginMatcher, type OriginMatch, type OriginMatcher } from './match.ts'
