/**
 * Allowed origins of public keys (CONTRACT.md section 4).
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
import { domainToASCII } from "node:url";
import { parse as tldtsParse } from "tldts";

export type ParseOriginResult = { ok: true; entry: string } | { ok: false; reason: string };

export type ParseOriginsResult =
  | { ok: true; entries: string[] }
  | { ok: false; errors: { index: number; value: string; reason: string }[] };

export type OriginMatch = { allowed: true; entry: string } | { allowed: false; reason: string };

export interface OriginMatcher {
  readonly entries: readonly string[];
  match(origin: string | null): OriginMatch;
}

type Scheme = "http" | "https";

/** A validated entry in structured form; `canonical` is what gets stored. */
type Entry =
  | { kind: "any"; canonical: "*" }
  /** Registrable domain: https, default port, the domain and every subdomain. */
  | { kind: "domain"; canonical: string; host: string }
  /** Host below a registrable domain: exactly that host, http and https, default ports. */
  | { kind: "host"; canonical: string; host: string }
  /** `scheme://host[:port]`: exactly that origin. `port` null means the scheme's default. */
  | { kind: "origin"; canonical: string; scheme: Scheme; host: string; port: number | null }
  /** `localhost:PORT`: http and https on localhost at that port. */
  | { kind: "localhost"; canonical: string; port: number };

type Parsed = { ok: true; value: Entry } | { ok: false; reason: string };

const EXAMPLES =
  'e.g. "example.com" (with its subdomains), "app.example.com", ' +
  '"https://app.example.com:8443", "localhost:3000" or "*"';

// Bounds the work done on hostile input; real entries are far shorter (host <= 253).
const MAX_ENTRY_LENGTH = 512;

// Per matcher; enough for the few origins a key really sees, small enough for junk input.
const MAX_MEMO = 32;

const DEFAULT_PORT: Record<Scheme, number> = { http: 80, https: 443 };

const SCHEME_RE = /^[a-z][a-z0-9+.-]*$/;
const LABEL_RE = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const IPV4_RE = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(?:\.(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
// What WHATWG URL would read as an IPv4 address: a last label that is a number.
const NUMERIC_LABEL_RE = /^(?:\d+|0x[0-9a-f]*)$/;
const PORT_RE = /^\d+$/;

const ok = (value: Entry): Parsed => ({ ok: true, value });
const fail = (reason: string): Parsed => ({ ok: false, reason });
const q = (s: string): string => JSON.stringify(s);

// ---------------------------------------------------------------------------------------
// Entry side

export function parseAllowedOrigin(raw: string): ParseOriginResult {
  const r = parseEntry(raw);
  return r.ok ? { ok: true, entry: r.value.canonical } : { ok: false, reason: r.reason };
}

export function parseAllowedOrigins(raw: readonly string[]): ParseOriginsResult {
  const entries: string[] = [];
  const seen = new Set<string>();
  const errors: { index: number; value: string; reason: string }[] = [];
  if (!Array.isArray(raw)) {
    return {
      ok: false,
      errors: [{ index: 0, value: String(raw), reason: `allowed origins must be a list of strings, ${EXAMPLES}` }],
    };
  }
  raw.forEach((value: unknown, index) => {
    const r = parseEntry(value);
    if (!r.ok) errors.push({ index, value: typeof value === "string" ? value : String(value), reason: r.reason });
    else if (!seen.has(r.value.canonical)) {
      seen.add(r.value.canonical);
      entries.push(r.value.canonical);
    }
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, entries };
}

function parseEntry(raw: unknown): Parsed {
  if (typeof raw !== "string") return fail(`an allowed origin must be a string, ${EXAMPLES}`);
  const trimmed = raw.trim();
  const shown = q(trimmed);
  if (trimmed === "") return fail(`the entry is empty; write one origin per entry, ${EXAMPLES}`);
  if (trimmed.length > MAX_ENTRY_LENGTH) {
    return fail(`the entry is ${trimmed.length} characters long; a host name has at most 253, ${EXAMPLES}`);
  }
  if (/[\t\n\v\f\r]/.test(trimmed)) return fail(`${shown} contains a tab or line break; remove it and give one origin per entry`);
  if (/\s/.test(trimmed)) return fail(`${shown} contains a space; remove it and give one origin per entry`);
  if (/[\x00-\x1f\x7f]/.test(trimmed)) return fail(`${shown} contains a control character; remove it`);

  let s = trimmed.toLowerCase();
  if (s === "*") return ok({ kind: "any", canonical: "*" });
  if (s === "null") {
    return fail(
      `${shown} is the opaque origin of sandboxed frames and file:// pages and cannot be allowed on its own; ` +
        'list the real site (e.g. "https://app.example.com") or use "*" to allow every request',
    );
  }
  if (s.includes("*")) return wildcardReason(s, shown);

  // A protocol alone: `https://`, `https:`, `https:/`.
  const protoOnly = /^([a-z][a-z0-9+.-]*):\/{0,3}$/.exec(s);
  if (protoOnly && (protoOnly[1] === "http" || protoOnly[1] === "https")) {
    return fail(`${shown} is a protocol alone; add the host after it, e.g. "${protoOnly[1]}://app.example.com"`);
  }
  if (protoOnly && s.endsWith("/")) return fail(unsupportedScheme(protoOnly[1]!, shown));

  if (s.endsWith("/")) s = s.slice(0, -1);

  const sep = s.indexOf("://");
  if (sep !== -1) {
    const scheme = s.slice(0, sep);
    if (!SCHEME_RE.test(scheme)) return fail(`${shown} does not start with a valid scheme; write "https://host" or "http://host"`);
    if (scheme !== "http" && scheme !== "https") return fail(unsupportedScheme(scheme, shown));
    return parseFullForm(scheme, s.slice(sep + 3), shown);
  }

  // `scheme:rest` without `//` (`https:example.com`, `mailto:x`), told apart from
  // `host:port` by the host's dot or the digits of a port.
  const colon = /^([a-z][a-z0-9+.-]*):(.*)$/.exec(s);
  if (colon && colon[1] !== "localhost" && !colon[1]!.includes(".") && !/^\d/.test(colon[2]!)) {
    const scheme = colon[1]!;
    if (scheme === "http" || scheme === "https") {
      return fail(`${shown} is missing "//" after the scheme; write "${scheme}://${colon[2]!.replace(/^\/+/, "")}"`);
    }
    return fail(unsupportedScheme(scheme, shown));
  }
  return parseBareForm(s, shown);
}

function unsupportedScheme(scheme: string, shown: string): string {
  return `${shown} uses the scheme "${scheme}:"; only http and https can be allowed, e.g. "https://app.example.com"`;
}

function wildcardReason(s: string, shown: string): Parsed {
  const m = /^(?:(https?):\/\/)?\*\.([^*]+?)\/?$/.exec(s);
  if (m) {
    const rest = parseEntry(m[2]);
    if (rest.ok && rest.value.kind === "domain") {
      return fail(
        `${shown} is a wildcard, which is not supported: write "${rest.value.canonical}", which already covers ${rest.value.canonical} ` +
          `and all its subdomains over https`,
      );
    }
    if (rest.ok && rest.value.kind === "host") {
      return fail(
        `${shown} is a wildcard, which is not supported: a registrable domain such as "${registrableDomain(rest.value.host) ?? rest.value.host}" ` +
          `covers all its subdomains over https; otherwise list each host, e.g. "${rest.value.canonical}"`,
      );
    }
  }
  return fail(
    `${shown} has a wildcard; one is only allowed as the lone entry "*" (every origin), and a domain entry such as "example.com" ` +
      `already covers all its subdomains`,
  );
}

/** `rest` is what follows `scheme://`. */
function parseFullForm(sch: Scheme, rest: string, shown: string): Parsed {
  if (rest === "") return fail(`${shown} has no host; write e.g. "${sch}://app.example.com"`);
  const auth = authorityProblem(rest, shown, `${sch}://`);
  if (auth) return fail(auth);

  const split = splitHostPort(rest, shown);
  if (!split.ok) return fail(split.reason);
  const { host: rawHost, port: rawPort } = split;

  let port: number | null = null;
  if (rawPort !== null) {
    const p = parsePort(rawPort, shown);
    if (typeof p === "string") return fail(p);
    port = p === DEFAULT_PORT[sch] ? null : p;
  }
  const origin = (host: string) => `${sch}://${host}${port === null ? "" : `:${port}`}`;

  if (rawHost.startsWith("[")) {
    const v6 = parseIPv6Literal(rawHost, shown);
    if (v6.startsWith("!")) return fail(v6.slice(1));
    return ok({ kind: "origin", canonical: origin(v6), scheme: sch, host: v6, port });
  }
  if (rawHost === "localhost") {
    return ok({ kind: "origin", canonical: origin("localhost"), scheme: sch, host: "localhost", port });
  }
  const h = checkHostName(rawHost, shown);
  if (!h.ok) return fail(h.reason);
  if (h.ip) return ok({ kind: "origin", canonical: origin(h.host), scheme: sch, host: h.host, port });
  const c = classifyDomain(h.host, shown);
  if (c !== "domain" && c !== "host") return fail(c.reason);
  return ok({ kind: "origin", canonical: origin(h.host), scheme: sch, host: h.host, port });
}

function parseBareForm(s: string, shown: string): Parsed {
  if (PORT_RE.test(s) || /^:\d*$/.test(s)) {
    return fail(`${shown} is a port alone; give the host too, e.g. "localhost:${s.replace(":", "") || "3000"}" or "https://app.example.com:${s.replace(":", "") || "8443"}"`);
  }
  const auth = authorityProblem(s, shown, "");
  if (auth) return fail(auth);

  if (s.startsWith("[") || (s.match(/:/g)?.length ?? 0) > 1) {
    const split = splitHostPort(s, shown);
    const port = split.ok && split.port !== null ? split.port : "PORT";
    const host = split.ok ? split.host : `[${s}]`;
    return fail(`${shown} is an IP address, which is only allowed in the full form; write "http://${host}:${port}" (or https)`);
  }

  const colon = s.lastIndexOf(":");
  const rawHost = colon === -1 ? s : s.slice(0, colon);
  const rawPort = colon === -1 ? null : s.slice(colon + 1);

  if (rawHost === "localhost") {
    if (rawPort === null) return fail(`${shown} needs a port; write "localhost:PORT" with your dev server's port, e.g. "localhost:3000"`);
    const p = parsePort(rawPort, shown);
    if (typeof p === "string") return fail(p);
    return ok({ kind: "localhost", canonical: `localhost:${p}`, port: p });
  }

  const h = checkHostName(rawHost, shown);
  if (!h.ok) return fail(h.reason);
  if (h.ip) {
    return fail(`${shown} is an IP address, which is only allowed in the full form; write "http://${h.host}:${rawPort ?? "PORT"}" (or https)`);
  }
  if (rawPort !== null) {
    const p = parsePort(rawPort, shown);
    if (typeof p === "string") return fail(p);
    const c = classifyDomain(h.host, shown);
    if (c !== "domain" && c !== "host") return fail(c.reason);
    const full = p === 443 ? `https://${h.host}` : `https://${h.host}:${p}`;
    return fail(`${shown} has a port but no scheme; write "${full}" (or "http://${h.host}:${p}") to allow exactly that origin`);
  }
  const c = classifyDomain(h.host, shown);
  if (c === "domain") return ok({ kind: "domain", canonical: h.host, host: h.host });
  if (c === "host") return ok({ kind: "host", canonical: h.host, host: h.host });
  return fail(c.reason);
}

/** User info, path, query or fragment in what should be `host[:port]`. */
function authorityProblem(s: string, shown: string, prefix: string): string | null {
  const at = s.lastIndexOf("@");
  if (at !== -1) {
    const host = s.slice(at + 1).split(/[/?#\\]/)[0] || "host";
    return `${shown} contains user info ("...@"); an origin has none, write only "${prefix}${host}"`;
  }
  const m = /[/?#\\]/.exec(s);
  if (!m) return null;
  const what = m[0] === "?" ? "a query (?...)" : m[0] === "#" ? "a fragment (#...)" : m[0] === "\\" ? "a backslash" : "a path";
  const base = s.slice(0, m.index);
  return `${shown} contains ${what}; an origin has none, write only "${prefix}${base}"`;
}

function splitHostPort(s: string, shown: string): { ok: true; host: string; port: string | null } | { ok: false; reason: string } {
  if (s.startsWith("[")) {
    const end = s.indexOf("]");
    if (end === -1) return { ok: false, reason: `${shown} opens "[" without closing "]"; write an IPv6 address as "http://[::1]:3000"` };
    const after = s.slice(end + 1);
    if (after === "") return { ok: true, host: s.slice(0, end + 1), port: null };
    if (!after.startsWith(":")) return { ok: false, reason: `${shown} has text after "]"; write an IPv6 origin as "http://[::1]:3000"` };
    return { ok: true, host: s.slice(0, end + 1), port: after.slice(1) };
  }
  const colons = s.split(":").length - 1;
  if (colons > 1) return { ok: false, reason: `${shown} looks like an IPv6 address without brackets; write it as "http://[${s}]:PORT"` };
  if (colons === 0) return { ok: true, host: s, port: null };
  const i = s.indexOf(":");
  return { ok: true, host: s.slice(0, i), port: s.slice(i + 1) };
}

function parsePort(p: string, shown: string): number | string {
  if (p === "") return `${shown} ends with ":" but no port; remove the ":" or add a port between 1 and 65535`;
  if (!PORT_RE.test(p)) return `the port "${p}" in ${shown} is not a number; give a port between 1 and 65535`;
  const n = Number(p);
  if (n < 1 || n > 65535) return `the port ${p} in ${shown} is outside 1-65535; give the port your site is served on`;
  if (p.length > 1 && p.startsWith("0")) return `the port "${p}" in ${shown} has leading zeros; write it as ${n}`;
  return n;
}

/**
 * Shape checks of a host name (before and after IDN conversion).
 * Returns the ASCII host, and whether it is an IPv4 literal.
 */
function checkHostName(raw: string, shown: string): { ok: true; host: string; ip: boolean } | { ok: false; reason: string } {
  const bad = (reason: string) => ({ ok: false as const, reason });
  if (raw === "") return bad(`${shown} has no host; ${EXAMPLES}`);
  if (raw.startsWith(".")) return bad(`${shown} starts with a dot; remove it (a domain entry already covers its subdomains)`);
  if (raw.endsWith(".")) return bad(`${shown} ends with a dot; remove the trailing dot`);
  if (raw.includes("..")) return bad(`${shown} has an empty label (".."); remove the extra dot`);
  if (/[^a-z0-9._\-\u0080-\uffff]/.test(raw)) {
    const c = /[^a-z0-9._\-\u0080-\uffff]/.exec(raw)![0];
    return bad(`${shown} contains "${c}", which cannot appear in a host name; use letters, digits, "-" and "."`);
  }

  // Any label starting with `xn--` must be valid punycode, which domainToASCII checks;
  // for ASCII input it must not change anything else.
  let host = raw;
  if (/[^\x00-\x7f]/.test(raw) || raw.includes("xn--")) {
    host = domainToASCII(raw);
    if (host === "") return bad(`${shown} is not a valid internationalised domain name; check its spelling`);
    if (!/[^\x00-\x7f]/.test(raw) && host !== raw) return bad(`${shown} is not a valid host name`);
  }

  const labels = host.split(".");
  const last = labels[labels.length - 1]!;
  if (NUMERIC_LABEL_RE.test(last)) {
    if (IPV4_RE.test(host)) return { ok: true, host, ip: true };
    return bad(`${shown} is not a valid IPv4 address; write four decimal numbers 0-255 without leading zeros, e.g. "http://127.0.0.1:3000"`);
  }
  if (host.length > 253) return bad(`${shown} is ${host.length} characters long as a host name; the limit is 253`);
  for (const label of labels) {
    if (label === "") return bad(`${shown} has an empty label; remove the extra dot`);
    if (label.length > 63) return bad(`${shown} has a label of ${label.length} characters ("${label.slice(0, 20)}..."); the limit is 63`);
    if (label.startsWith("-") || label.endsWith("-")) {
      return bad(`${shown} has a label starting or ending with "-" ("${label}"); remove the hyphen`);
    }
    if (!LABEL_RE.test(label)) return bad(`${shown} has an invalid label "${label}"; use letters, digits and "-"`);
  }
  return { ok: true, host, ip: false };
}

/** Classify a valid ASCII host by the Public Suffix List (private section included). */
function classifyDomain(host: string, shown: string): "domain" | "host" | { reason: string } {
  const r = tldtsParse(host, { allowPrivateDomains: true, extractHostname: false, detectIp: false });
  // tldts answers unknown TLDs with the implicit "*" rule: neither ICANN nor private.
  if (!r.isIcann && !r.isPrivate) {
    const tld = host.slice(host.lastIndexOf(".") + 1);
    const local = tld === "localhost" ? `; for local development use "localhost:PORT"` : "";
    return {
      reason: `${shown} is not under a known public suffix ("${tld}" is not in the Public Suffix List); ` +
        `use the site's public domain name${local}`,
    };
  }
  if (r.domain === null || r.publicSuffix === host) {
    return {
      reason: `${shown} is a public suffix (${suffixExamples(host)}), shared by unrelated sites; ` +
        `give your own domain below it, e.g. "example.${host}"`,
    };
  }
  return r.domain === host ? "domain" : "host";
}

/** Other public suffixes, never the one being explained (which is already named). */
function suffixExamples(host: string): string {
  const others = ["com", "co.uk", "github.io"].filter((suffix) => suffix !== host).map(q);
  return `like ${others.slice(0, -1).join(", ")} or ${others.at(-1)}`;
}

function registrableDomain(host: string): string | null {
  return tldtsParse(host, { allowPrivateDomains: true, extractHostname: false }).domain;
}

/**
 * Parse `[v6]` strictly; return its WHATWG serialization (`[::1]`) or "!" + reason.
 * Written by hand because URL would accept zone ids and other forms we refuse.
 */
function parseIPv6Literal(bracketed: string, shown: string): string {
  const bad = `!${shown} has an invalid IPv6 address; write e.g. "http://[::1]:3000"`;
  const inner = bracketed.slice(1, -1);
  if (!/^[0-9a-f:.]+$/.test(inner)) return bad;
  const halves = inner.split("::");
  if (halves.length > 2) return bad;
  const parseGroups = (part: string, allowV4: boolean): number[] | null => {
    if (part === "") return [];
    const out: number[] = [];
    const groups = part.split(":");
    for (let i = 0; i < groups.length; i++) {
      const g = groups[i]!;
      if (allowV4 && i === groups.length - 1 && g.includes(".")) {
        if (!IPV4_RE.test(g)) return null;
        const [a, b, c, d] = g.split(".").map(Number) as [number, number, number, number];
        out.push((a << 8) | b, (c << 8) | d);
      } else if (/^[0-9a-f]{1,4}$/.test(g)) out.push(parseInt(g, 16));
      else return null;
    }
    return out;
  };
  const head = parseGroups(halves[0]!, halves.length === 1);
  const tail = halves.length === 2 ? parseGroups(halves[1]!, true) : [];
  if (!head || !tail) return bad;
  let pieces: number[];
  if (halves.length === 2) {
    if (head.length + tail.length > 7) return bad;
    pieces = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  } else {
    if (head.length !== 8) return bad;
    pieces = head;
  }
  // WHATWG: compress the first longest run of two or more zero pieces.
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (pieces[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && pieces[j] === 0) j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  let out = "";
  for (let i = 0; i < 8; i++) {
    if (i === best) { out += i === 0 ? "::" : ":"; i += bestLen - 1; continue; }
    out += pieces[i]!.toString(16);
    if (i < 7) out += ":";
  }
  return `[${out}]`;
}

// ---------------------------------------------------------------------------------------
// Origin side: compile once per key, match on every request

export function compileOriginMatcher(entries: readonly string[]): OriginMatcher {
  const list = Object.freeze([...entries]);
  // Stored entries are re-parsed rather than trusted; one that no longer validates (e.g.
  // its domain became a public suffix) matches nothing, so the key fails closed.
  const parsed: Entry[] = [];
  const ignored: string[] = [];
  for (const e of list) {
    const r = parseEntry(e);
    if (r.ok) parsed.push(r.value);
    else ignored.push(e);
  }

  let any: string | null = null;
  const exact = new Map<string, string>();
  const domains: { domain: string; entry: string }[] = [];
  const addExact = (origin: string, entry: string) => { if (!exact.has(origin)) exact.set(origin, entry); };
  const serialize = (scheme: Scheme, host: string, port: number | null) =>
    port === null || port === DEFAULT_PORT[scheme] ? `${scheme}://${host}` : `${scheme}://${host}:${port}`;

  for (const e of parsed) {
    switch (e.kind) {
      case "any": any ??= e.canonical; break;
      case "domain": domains.push({ domain: e.host, entry: e.canonical }); break;
      case "host":
        addExact(`https://${e.host}`, e.canonical);
        addExact(`http://${e.host}`, e.canonical);
        break;
      case "origin": addExact(e.canonical, e.canonical); break;
      case "localhost":
        // Browsers omit a default port: `localhost:443` is sent as `https://localhost`.
        addExact(serialize("http", "localhost", e.port), e.canonical);
        addExact(serialize("https", "localhost", e.port), e.canonical);
        break;
    }
  }

  const anyMatch: OriginMatch | null = any === null ? null : { allowed: true, entry: any };
  // Results are shared, immutable objects so the hot path allocates nothing on success.
  const hits = new Map<string, OriginMatch>();
  const hit = (entry: string): OriginMatch => {
    let r = hits.get(entry);
    if (!r) hits.set(entry, (r = Object.freeze({ allowed: true as const, entry })));
    return r;
  };

  const denials = new Map<string, OriginMatch>();
  let noOrigin: OriginMatch | undefined;
  return {
    entries: list,
    match(origin: string | null): OriginMatch {
      if (anyMatch !== null) return anyMatch;
      if (origin === null) {
        return (noOrigin ??= Object.freeze({ allowed: false as const, reason: explainDenial(null, list, parsed, ignored) }));
      }
      const e = exact.get(origin);
      if (e !== undefined) return hit(e);
      // Domain entries: `https://` + (labels + ".")? + domain, default port only. Ending
      // with the domain rules out a port, path or trailing dot; the prefix is scanned.
      if (domains.length > 0 && origin.length <= 8 + 253 && origin.startsWith("https://")) {
        for (let i = 0; i < domains.length; i++) {
          const d = domains[i]!;
          const n = origin.length - d.domain.length;
          if (n < 8 || !origin.endsWith(d.domain)) continue;
          if (n === 8) return hit(d.entry);
          if (n > 9 && origin.charCodeAt(n - 1) === 46 /* . */ && labelsValid(origin, 8, n - 1)) return hit(d.entry);
        }
      }
      // Denials are memoised because a misconfigured page repeats the same origin on
      // every request, and building the explanation is the only costly part.
      let denied = denials.get(origin);
      if (denied === undefined) {
        if (denials.size >= MAX_MEMO) denials.clear();
        denied = Object.freeze({ allowed: false as const, reason: explainDenial(origin, list, parsed, ignored) });
        denials.set(origin, denied);
      }
      return denied;
    },
  };
}

/** Dot-separated labels in s[start, end): 1-63 of [a-z0-9_-], no edge hyphen. No allocation. */
function labelsValid(s: string, start: number, end: number): boolean {
  let labelStart = start;
  for (let i = start; i <= end; i++) {
    const c = i === end ? 46 : s.charCodeAt(i);
    if (c === 46) {
      const len = i - labelStart;
      if (len < 1 || len > 63) return false;
      if (s.charCodeAt(labelStart) === 45 || s.charCodeAt(i - 1) === 45) return false;
      labelStart = i + 1;
    } else if (!((c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c === 45 || c === 95)) {
      return false;
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------
// Denial reasons (slow path: only on refusals, so allocations and regexes are fine here)

const SERIALIZED_RE =
  /^(https?):\/\/((?:[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?\.)*[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?|\[[0-9a-f:.]+\])(?::([1-9]\d{0,4}))?$/;

type SeenOrigin = { scheme: Scheme; host: string; port: number | null };

/**
 * Says why `origin` was refused, naming every entry of the key exactly once: an entry
 * that nearly matched is named in its hint, the others in the list after it, and an
 * invalid stored entry only among the ignored ones.
 */
function explainDenial(origin: string | null, list: readonly string[], parsed: Entry[], ignored: string[]): string {
  const ignoredText = ignored.length ? ` (invalid, ignored: ${ignored.map(q).join(", ")})` : "";
  const valid = parsed.map((e) => e.canonical);
  const allowed = list.length === 0
    ? "this key has no allowed origins"
    : valid.length === 0
      ? `this key has no valid allowed origins${ignoredText}`
      : `this key allows ${valid.map(q).join(", ")}${ignoredText}`;
  if (origin === null) {
    return `the request has no Origin header, and only the entry "*" matches such requests (${allowed}); ` +
      `call from a browser page on an allowed origin, or use a private key from a server`;
  }
  const shown = q(origin.length > 300 ? `${origin.slice(0, 300)}...` : origin);
  const notSerialized = originProblem(origin);
  if (notSerialized !== null) {
    return `Origin ${shown} ${notSerialized}, so it matches none of this key's entries, only "*" would (${allowed})`;
  }
  const m = SERIALIZED_RE.exec(origin)!;
  const seen: SeenOrigin = { scheme: m[1] as Scheme, host: m[2]!, port: m[3] ? Number(m[3]) : null };
  const hints = parsed.map((e) => ({ entry: e.canonical, hint: hintFor(e, seen, origin) })).filter((h) => h.hint !== null);
  if (hints.length === 0) return `Origin ${shown} is not allowed: ${allowed}. To allow it, add ${q(origin)}`;
  const hinted = new Set(hints.map((h) => h.entry));
  const others = valid.filter((entry) => !hinted.has(entry));
  const whys = [...new Set(hints.map((h) => `entry ${q(h.entry)} ${h.hint!.why}`))].join("; ");
  const rest = others.length ? `; the key's other entries: ${others.map(q).join(", ")}` : "";
  const fixes = [...new Set(hints.map((h) => h.hint!.fix ?? `add ${q(origin)}`))].join(", or ");
  return `Origin ${shown} is not allowed: ${whys}${rest}${ignoredText}. To allow it, ${fixes}`;
}

/** Why a header value is not a serialized origin as browsers send it; null when it is. */
function originProblem(o: string): string | null {
  if (o === "") return "is empty";
  if (o === "null") return "is the opaque origin of a sandboxed frame, a file:// page or a privacy-sensitive redirect";
  if (o.includes(",")) return "holds several values";
  if (/\s/.test(o)) return "contains whitespace";
  if (/[^\x00-\x7f]/.test(o)) return "has a raw non-ASCII host; browsers send the punycode form (xn--...)";
  if (/[A-Z]/.test(o)) return "contains upper-case letters; browsers send origins in lower case";
  const sm = /^([a-z][a-z0-9+.-]*):\/\/(.*)$/.exec(o);
  if (!sm) return "is not of the form scheme://host[:port]";
  if (sm[1] !== "http" && sm[1] !== "https") return `has the scheme "${sm[1]}:"; only http and https origins can be allowed`;
  const rest = sm[2]!;
  if (rest.includes("@")) return "contains user info";
  if (/[/?#\\]/.test(rest)) return "contains a path, query or fragment";
  const pm = /^(.*?)(?::(\d*))?$/.exec(rest)!;
  const host = pm[1]!;
  if (host.endsWith(".")) return "ends its host with a dot";
  if (pm[2] !== undefined) {
    const p = Number(pm[2]);
    if (pm[2] === "" || pm[2].startsWith("0") || p < 1 || p > 65535) return "has an invalid port";
    if (p === DEFAULT_PORT[sm[1] as Scheme]) return `names the default port ${p}, which browsers never send`;
  }
  if (!SERIALIZED_RE.test(o)) return "does not have a valid host";
  return null;
}

/** How an entry nearly matched the origin (`why`, after "entry X"), and the fix when it is not "add the origin". */
function hintFor(e: Entry, o: SeenOrigin, origin: string): { why: string; fix?: string } | null {
  const under = (h: string, d: string) => h === d || h.endsWith(`.${d}`);
  const portText = (scheme: Scheme, port: number | null) => `${port ?? DEFAULT_PORT[scheme]}`;
  switch (e.kind) {
    case "any": return null;
    case "domain":
      if (!under(o.host, e.host)) return null;
      if (o.scheme === "http") return { why: "requires https (the origin uses http)" };
      if (o.port !== null) return { why: `matches the default port 443 only (port ${o.port} differs)` };
      return null;
    case "host":
      if (o.host === e.host && o.port !== null) return { why: `matches the default ports only (port ${o.port} differs)` };
      if (o.host.endsWith(`.${e.host}`)) return { why: "matches that host only, not its subdomains" };
      return null;
    case "origin": {
      if (o.host !== e.host) return o.host.endsWith(`.${e.host}`) ? { why: "matches that exact origin only, not subdomains" } : null;
      const parts: string[] = [];
      if (o.scheme !== e.scheme) parts.push(`requires ${e.scheme} (the origin uses ${o.scheme})`);
      const ep = portText(e.scheme, e.port), op = portText(o.scheme, o.port);
      if (ep !== op) parts.push(`requires port ${ep} (port ${op} differs)`);
      return parts.length ? { why: parts.join(" and ") } : null;
    }
    case "localhost":
      if (o.host === "localhost") {
        const port = portText(o.scheme, o.port);
        return { why: `requires port ${e.port} (port ${port} differs)`, fix: `add "localhost:${port}"` };
      }
      if (/^127\./.test(o.host) || o.host === "[::1]") {
        return { why: `matches the name localhost only, not the address ${o.host}`, fix: `open the page as localhost or add ${q(origin)}` };
      }
      return null;
  }
}
