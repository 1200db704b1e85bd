import { describe, expect, test } from 'bun:test'
import { compileOriginMatcher, parseAllowedOrigin, parseAllowedOrigins } from '../../src/access/origin/index.ts'

// [raw entry, canonical stored form]
const VALID: [string, string][] = [
  ['*', '*'],
  ['  *  ', '*'],
  ['example.com', 'example.com'],
  ['Example.COM', 'example.com'],
  [' example.com/ ', 'example.com'],
  ['\texample.com\n', 'example.com'],
  ['app.example.com', 'app.example.com'],
  ['a.b.example.com', 'a.b.example.com'],
  ['www.example.co.uk', 'www.example.co.uk'],
  ['example.co.uk', 'example.co.uk'],
  ['foo.github.io', 'foo.github.io'],
  ['my-app.vercel.app', 'my-app.vercel.app'],
  ['a_b.example.com', 'a_b.example.com'],
  ['https://app.example.com', 'https://app.example.com'],
  ['https://app.example.com/', 'https://app.example.com'],
  ['HTTPS://App.Example.com', 'https://app.example.com'],
  ['https://app.example.com:443', 'https://app.example.com'],
  ['http://app.example.com:80', 'http://app.example.com'],
  ['https://app.example.com:80', 'https://app.example.com:80'],
  ['http://app.example.com:443', 'http://app.example.com:443'],
  ['https://app.example.com:8443', 'https://app.example.com:8443'],
  ['https://example.com', 'https://example.com'],
  ['localhost:3000', 'localhost:3000'],
  ['LOCALHOST:3000/', 'localhost:3000'],
  ['localhost:1', 'localhost:1'],
  ['localhost:65535', 'localhost:65535'],
  ['http://localhost:3000', 'http://localhost:3000'],
  ['https://localhost:3000', 'https://localhost:3000'],
  ['http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
  ['https://10.0.0.255:8443', 'https://10.0.0.255:8443'],
  ['http://[::1]:3000', 'http://[::1]:3000'],
  ['http://[0:0:0:0:0:0:0:1]:3000', 'http://[::1]:3000'],
  ['https://[2001:DB8:0:0:1:0:0:1]', 'https://[2001:db8::1:0:0:1]'],
  ['bücher.de', 'xn--bcher-kva.de'],
  ['BÜCHER.de', 'xn--bcher-kva.de'],
  ['https://Bücher.de:443/', 'https://xn--bcher-kva.de'],
  ['xn--bcher-kva.de', 'xn--bcher-kva.de'],
  ['пример.рф', 'xn--e1afmkfd.xn--p1ai'],
]

// [raw entry, what the reason must say (the cause or the fix)]
const INVALID: [string, RegExp][] = [
  ['', /empty/],
  ['   ', /empty/],
  ['https://', /protocol alone.*https:\/\/app\.example\.com/],
  ['http://', /protocol alone/],
  ['https:', /protocol alone/],
  [':8080', /port alone/],
  ['8080', /port alone/],
  ['com', /public suffix/],
  ['co.uk', /public suffix/],
  ['github.io', /public suffix/],
  ['vercel.app', /public suffix/],
  ['https://github.io', /public suffix/],
  ['example.unknowntld', /not under a known public suffix/],
  ['app.example.unknowntld', /not under a known public suffix/],
  ['example.local', /not under a known public suffix/],
  ['http://foo.localhost:3000', /localhost:PORT/],
  ['*.example.com', /"example\.com".*already covers/],
  ['https://*.example.com', /"example\.com".*already covers/],
  ['*.app.example.com', /"example\.com" covers all its subdomains/],
  ['*example.com', /lone entry "\*"/],
  ['example.*', /lone entry "\*"/],
  ['https://example.com/path', /path.*"https:\/\/example\.com"/],
  ['example.com/path', /path.*"example\.com"/],
  ['https://example.com//', /path/],
  ['https://example.com?x=1', /query/],
  ['https://example.com#top', /fragment/],
  ['https://user:pw@example.com', /user info.*"https:\/\/example\.com"/],
  ['user@example.com', /user info/],
  ['https://example.com\\x', /backslash/],
  ['null', /opaque origin/],
  ['NULL', /opaque origin/],
  ['localhost', /needs a port.*localhost:3000/],
  // localhost without a port in any form, a default port written out included.
  ['http://localhost', /needs a port.*"http:\/\/localhost:3000"/],
  ['https://localhost', /needs a port.*localhost:3000/],
  ['HTTPS://LocalHost/', /needs a port/],
  ['http://localhost:80', /needs a port/],
  ['https://localhost:443', /needs a port/],
  ['localhost:', /no port/],
  ['localhost:0', /outside 1-65535/],
  ['localhost:65536', /outside 1-65535/],
  ['localhost:99999', /outside 1-65535/],
  ['localhost:03000', /leading zeros.*3000/],
  ['localhost:abc', /not a number/],
  ['https://example.com:0', /outside 1-65535/],
  ['https://example.com:', /no port/],
  ['example.com:8080', /"https:\/\/example\.com:8080"/],
  ['app.example.com:8443', /"https:\/\/app\.example\.com:8443"/],
  ['127.0.0.1', /only allowed in the full form.*http:\/\/127\.0\.0\.1:PORT/],
  ['127.0.0.1:3000', /"http:\/\/127\.0\.0\.1:3000"/],
  ['::1', /only allowed in the full form/],
  ['[::1]:3000', /"http:\/\/\[::1\]:3000"/],
  ['http://::1:3000', /brackets/],
  ['http://127.1:3000', /not a valid IPv4/],
  ['http://127.000.0.1:3000', /not a valid IPv4/],
  ['http://0x7f.0.0.1', /not a valid IPv4/],
  ['http://[::1%25eth0]:3000', /invalid IPv6/],
  ['http://[1:2:3:4:5:6:7:8:9]', /invalid IPv6/],
  [`${'a'.repeat(64)}.com`, /label of 64 characters.*63/],
  [`${`${'a'.repeat(60)}.`.repeat(5)}com`, /limit is 253/],
  ['a..example.com', /empty label/],
  ['.example.com', /starts with a dot/],
  ['example.com.', /ends with a dot/],
  ['https://example.com.', /ends with a dot/],
  ['-app.example.com', /starting or ending with "-"/],
  ['app-.example.com', /starting or ending with "-"/],
  ['exa\tmple.com', /tab/],
  ['exa mple.com', /space/],
  ['example.com https://x.io', /space/],
  ['ftp://example.com', /uses the scheme "ftp:"; only http and https/],
  ['ws://example.com', /uses the scheme "ws:"; only http and https/],
  ['chrome-extension://abcdef', /uses the scheme "chrome-extension:"; only http and https/],
  ['file:///etc/passwd', /uses the scheme "file:"; only http and https/],
  ['javascript:alert(1)', /uses the scheme "javascript:"; only http and https/],
  ['https:example.com', /missing "\/\/".*"https:\/\/example\.com"/],
  ['ex%41mple.com', /"%"/],
  ['xn--zz.com', /not a valid internationalised domain/],
  ['exam!ple.com', /"!"/],
]

describe('parseAllowedOrigin: valid entries are stored in canonical form', () => {
  test.each(VALID)('%p -> %p', (raw, canonical) => {
    expect(parseAllowedOrigin(raw)).toEqual({ ok: true, entry: canonical })
  })

  // A stored entry is parsed again when a matcher is compiled: it must not change.
  test.each(VALID.map(([, c]) => c))('canonical %p parses to itself', (canonical) => {
    expect(parseAllowedOrigin(canonical)).toEqual({ ok: true, entry: canonical })
  })
})

describe('parseAllowedOrigin: invalid entries are refused with a reason', () => {
  test.each(INVALID)('%p', (raw, says) => {
    const r = parseAllowedOrigin(raw)
    expect(r.ok).toBe(false)
    if (r.ok) return
    expect(r.reason.length).toBeGreaterThan(20)
    expect(r.reason).toMatch(says)
  })

  // Callers (the admin API, the dashboard) show the reason as it is: it names the entry
  // itself, once, so "\"com\": \"com\" is a public suffix" cannot come back.
  test.each(INVALID.filter(([raw]) => raw.trim() !== '' && raw.trim().length <= 300))('%p is named once in its reason', (raw) => {
    const r = parseAllowedOrigin(raw)
    if (r.ok) return
    expect(r.reason.split(JSON.stringify(raw.trim())).length - 1).toBe(1)
  })

  test('a non-string entry is refused, not thrown on', () => {
    const r = parseAllowedOrigin(42 as unknown as string)
    expect(r.ok).toBe(false)
  })
})

// The whole reason for each kind of entry refused, as the admin API and the dashboard show
// it: the patterns above say what a reason holds, these that it reads right.
const WHOLE_ENTRY_REASONS: [string, string][] = [
  ['https://', '"https://" is a protocol alone; add the host after it, e.g. "https://app.example.com"'],
  ['ftp://', '"ftp://" uses the scheme "ftp:"; only http and https can be allowed, e.g. "https://app.example.com"'],
  ['ftp:', '"ftp:" uses the scheme "ftp:"; only http and https can be allowed, e.g. "https://app.example.com"'],
  ['ftp:/', '"ftp:/" uses the scheme "ftp:"; only http and https can be allowed, e.g. "https://app.example.com"'],
  ['https:example.com', '"https:example.com" is missing "//" after the scheme; write "https://example.com"'],
  ['https:/example.com', '"https:/example.com" is missing "//" after the scheme; write "https://example.com"'],
  ['https:///example.com', '"https:///example.com" contains a path; an origin has none, write only "https://"'],
  ['1http://x.com', '"1http://x.com" does not start with a valid scheme; write "https://host" or "http://host"'],
  [
    'h*p://x.com',
    '"h*p://x.com" has a wildcard; one is only allowed as the lone entry "*" (every origin), and a domain entry such as "example.com" already covers all its subdomains',
  ],
  [
    '*.example.com',
    '"*.example.com" is a wildcard, which is not supported: write "example.com", which already covers example.com and all its subdomains over https',
  ],
  [
    'https://*.example.com',
    '"https://*.example.com" is a wildcard, which is not supported: write "example.com", which already covers example.com and all its subdomains over https',
  ],
  [
    'http://*.example.com',
    '"http://*.example.com" is a wildcard, which is not supported: write "example.com", which already covers example.com and all its subdomains over https',
  ],
  [
    '*.app.example.com',
    '"*.app.example.com" is a wildcard, which is not supported: a registrable domain such as "example.com" covers all its subdomains over https; otherwise list each host, e.g. "app.example.com"',
  ],
  [
    '*.com',
    '"*.com" has a wildcard; one is only allowed as the lone entry "*" (every origin), and a domain entry such as "example.com" already covers all its subdomains',
  ],
  [
    '*.',
    '"*." has a wildcard; one is only allowed as the lone entry "*" (every origin), and a domain entry such as "example.com" already covers all its subdomains',
  ],
  [':3000', '":3000" is a port alone; give the host too, e.g. "localhost:3000" or "https://app.example.com:3000"'],
  [':', '":" is a port alone; give the host too, e.g. "localhost:3000" or "https://app.example.com:8443"'],
  ['3000', '"3000" is a port alone; give the host too, e.g. "localhost:3000" or "https://app.example.com:3000"'],
  ['::1', '"::1" is an IP address, which is only allowed in the full form; write "http://[::1]:PORT" (or https)'],
  ['[::1', '"[::1" is an IP address, which is only allowed in the full form; write "http://[::1]:PORT" (or https)'],
  ['a\u000bb.com', '"a\\u000bb.com" contains a tab or line break; remove it and give one origin per entry'],
  ['a\tb.com', '"a\\tb.com" contains a tab or line break; remove it and give one origin per entry'],
  ['a\u0001b.com', '"a\\u0001b.com" contains a control character; remove it'],
  ['ab.com', '"ab.com" contains a control character; remove it'],
  [
    'null',
    '"null" is the opaque origin of sandboxed frames and file:// pages and cannot be allowed on its own; list the real site (e.g. "https://app.example.com") or use "*" to allow every request',
  ],
  ['file://', '"file://" uses the scheme "file:"; only http and https can be allowed, e.g. "https://app.example.com"'],
  [
    'chrome-extension://abc',
    '"chrome-extension://abc" uses the scheme "chrome-extension:"; only http and https can be allowed, e.g. "https://app.example.com"',
  ],
  ['localhost', '"localhost" needs a port; write "localhost:PORT" with your dev server\'s port, e.g. "localhost:3000"'],
  ['localhost:0', 'the port 0 in "localhost:0" is outside 1-65535; give the port your site is served on'],
  ['localhost:65536', 'the port 65536 in "localhost:65536" is outside 1-65535; give the port your site is served on'],
  ['localhost:080', 'the port "080" in "localhost:080" has leading zeros; write it as 80'],
  [
    'example.com:8080',
    '"example.com:8080" has a port but no scheme; write "https://example.com:8080" (or "http://example.com:8080") to allow exactly that origin',
  ],
  ['https://example.com:0', 'the port 0 in "https://example.com:0" is outside 1-65535; give the port your site is served on'],
  ['https://example.com:99999', 'the port 99999 in "https://example.com:99999" is outside 1-65535; give the port your site is served on'],
  [
    'https://999.0.0.1',
    '"https://999.0.0.1" is not a valid IPv4 address; write four decimal numbers 0-255 without leading zeros, e.g. "http://127.0.0.1:3000"',
  ],
  [
    'https://0x7f.0.0.1',
    '"https://0x7f.0.0.1" is not a valid IPv4 address; write four decimal numbers 0-255 without leading zeros, e.g. "http://127.0.0.1:3000"',
  ],
  [
    'https://1.2.3',
    '"https://1.2.3" is not a valid IPv4 address; write four decimal numbers 0-255 without leading zeros, e.g. "http://127.0.0.1:3000"',
  ],
  [
    'com',
    '"com" is a public suffix (like "co.uk" or "github.io"), shared by unrelated sites; give your own domain below it, e.g. "example.com"',
  ],
  [
    'github.io',
    '"github.io" is a public suffix (like "com" or "co.uk"), shared by unrelated sites; give your own domain below it, e.g. "example.github.io"',
  ],
  [
    'foo.local',
    '"foo.local" is not under a known public suffix ("local" is not in the Public Suffix List); use the site\'s public domain name',
  ],
  ['ex%41mple.com', '"ex%41mple.com" contains "%", which cannot appear in a host name; use letters, digits, "-" and "."'],
  ['a..b.com', '"a..b.com" has an empty label (".."); remove the extra dot'],
  ['-a.com', '"-a.com" has a label starting or ending with "-" ("-a"); remove the hyphen'],
  ['a-.com', '"a-.com" has a label starting or ending with "-" ("a-"); remove the hyphen'],
  ['example.com/path', '"example.com/path" contains a path; an origin has none, write only "example.com"'],
  ['example.com?q', '"example.com?q" contains a query (?...); an origin has none, write only "example.com"'],
  ['user@example.com', '"user@example.com" contains user info ("...@"); an origin has none, write only "example.com"'],
  ['https://example.com#f', '"https://example.com#f" contains a fragment (#...); an origin has none, write only "https://example.com"'],
  [
    '',
    'the entry is empty; write one origin per entry, e.g. "example.com" (with its subdomains), "app.example.com", "https://app.example.com:8443", "localhost:3000" or "*"',
  ],
  [
    '   ',
    'the entry is empty; write one origin per entry, e.g. "example.com" (with its subdomains), "app.example.com", "https://app.example.com:8443", "localhost:3000" or "*"',
  ],
]

describe('parseAllowedOrigin: refusal reasons, whole', () => {
  test.each(WHOLE_ENTRY_REASONS)('%p', (raw, reason) => {
    expect(parseAllowedOrigin(raw)).toEqual({ ok: false, reason })
  })

  test('a list that is not a list, and entries that are not strings, are refused by index and shown as text', () => {
    const examples = 'e.g. "example.com" (with its subdomains), "app.example.com", "https://app.example.com:8443", "localhost:3000" or "*"'
    expect(parseAllowedOrigins('example.com' as unknown as string[])).toEqual({
      ok: false,
      errors: [{ index: 0, value: 'example.com', reason: `allowed origins must be a list of strings, ${examples}` }],
    })
    expect(parseAllowedOrigins([42, 'example.com', 'https://', null] as unknown as string[])).toEqual({
      ok: false,
      errors: [
        { index: 0, value: '42', reason: `an allowed origin must be a string, ${examples}` },
        { index: 2, value: 'https://', reason: '"https://" is a protocol alone; add the host after it, e.g. "https://app.example.com"' },
        { index: 3, value: 'null', reason: `an allowed origin must be a string, ${examples}` },
      ],
    })
  })

  test('an entry of 253 characters is a host name too long in a label; 254 is too long as a whole', () => {
    expect(parseAllowedOrigin('x'.repeat(253))).toEqual({
      ok: false,
      reason: `"${'x'.repeat(253)}" has a label of 253 characters ("${'x'.repeat(20)}..."); the limit is 63`,
    })
    expect(parseAllowedOrigin('x'.repeat(254))).toEqual({
      ok: false,
      reason: `"${'x'.repeat(254)}" is 254 characters long as a host name; the limit is 253`,
    })
  })
})

describe('parseAllowedOrigins', () => {
  test('de-duplicates canonical entries and keeps first-seen order', () => {
    expect(
      parseAllowedOrigins(['Example.com', 'localhost:3000', 'example.com/', 'https://a.example.com:443', 'https://a.example.com']),
    ).toEqual({ ok: true, entries: ['example.com', 'localhost:3000', 'https://a.example.com'] })
  })

  test('reports every invalid entry by index with its original value', () => {
    const r = parseAllowedOrigins(['example.com', '*.example.com', 'app.example.com', '8080'])
    expect(r.ok).toBe(false)
    if (r.ok) return
    expect(r.errors.map((e) => [e.index, e.value])).toEqual([
      [1, '*.example.com'],
      [3, '8080'],
    ])
    for (const e of r.errors) expect(e.reason).not.toBe('')
  })

  test('an empty list is valid here (the caller requires at least one entry)', () => {
    expect(parseAllowedOrigins([])).toEqual({ ok: true, entries: [] })
  })
})

// [entries, Origin header (null = missing), entry expected to match, or false]
const MATCH: [string[], string | null, string | false][] = [
  // `*`
  [['*'], 'https://anything.example', '*'],
  [['*'], null, '*'],
  [['*'], 'null', '*'],
  [['*'], 'HTTPS://WEIRD', '*'],
  [['*', 'example.com'], 'https://evil.io', '*'],
  // registrable domain
  [['example.com'], 'https://example.com', 'example.com'],
  [['example.com'], 'https://www.example.com', 'example.com'],
  [['example.com'], 'https://a.b.example.com', 'example.com'],
  [['example.com'], 'http://example.com', false],
  [['example.com'], 'http://www.example.com', false],
  [['example.com'], 'https://example.com:8443', false],
  [['example.com'], 'https://www.example.com:8443', false],
  [['example.com'], 'https://example.com:443', false],
  [['example.com'], 'https://evilexample.com', false],
  [['example.com'], 'https://example.com.evil.io', false],
  [['example.com'], 'https://example.co', false],
  [['example.com'], 'https://example.com.', false],
  [['example.com'], 'https://www.example.com.', false],
  [['example.com'], 'https://Example.com', false],
  [['example.com'], 'https://WWW.example.com', false],
  [['example.com'], 'https://example.com/', false],
  [['example.com'], 'https://example.com/path', false],
  [['example.com'], 'https://user@example.com', false],
  [['example.com'], 'https://user@www.example.com', false],
  [['example.com'], 'https://.example.com', false],
  [['example.com'], 'https://a..example.com', false],
  [['example.com'], 'https://-a.example.com', false],
  [['example.com'], 'https://a b.example.com', false],
  [['example.com'], 'https://example.com, https://example.com', false],
  [['example.com'], 'wss://example.com', false],
  [['example.com'], 'null', false],
  [['example.com'], null, false],
  [['example.com'], '', false],
  [['foo.github.io'], 'https://foo.github.io', 'foo.github.io'],
  [['foo.github.io'], 'https://bar.github.io', false],
  [['example.co.uk'], 'https://shop.example.co.uk', 'example.co.uk'],
  [['example.co.uk'], 'https://other.co.uk', false],
  // host below a registrable domain
  [['app.example.com'], 'https://app.example.com', 'app.example.com'],
  [['app.example.com'], 'http://app.example.com', 'app.example.com'],
  [['app.example.com'], 'https://x.app.example.com', false],
  [['app.example.com'], 'https://example.com', false],
  [['app.example.com'], 'https://app.example.com:8443', false],
  [['app.example.com'], 'http://app.example.com:8080', false],
  [['app.example.com'], 'https://app.example.com:443', false],
  // full forms
  [['https://app.example.com'], 'https://app.example.com', 'https://app.example.com'],
  [['https://app.example.com'], 'http://app.example.com', false],
  [['https://app.example.com'], 'https://app.example.com:8443', false],
  [['https://app.example.com'], 'https://www.app.example.com', false],
  [['https://app.example.com:8443'], 'https://app.example.com:8443', 'https://app.example.com:8443'],
  [['https://app.example.com:8443'], 'https://app.example.com', false],
  [['https://app.example.com:8443'], 'http://app.example.com:8443', false],
  [['https://app.example.com:8443'], 'https://app.example.com:8444', false],
  [['http://app.example.com'], 'http://app.example.com', 'http://app.example.com'],
  [['http://app.example.com'], 'https://app.example.com', false],
  [['https://example.com'], 'https://www.example.com', false],
  [['http://127.0.0.1:3000'], 'http://127.0.0.1:3000', 'http://127.0.0.1:3000'],
  [['http://127.0.0.1:3000'], 'http://localhost:3000', false],
  [['http://[::1]:3000'], 'http://[::1]:3000', 'http://[::1]:3000'],
  [['http://localhost:8080'], 'http://localhost:8080', 'http://localhost:8080'],
  [['http://localhost:8080'], 'https://localhost:8080', false],
  // localhost:PORT
  [['localhost:3000'], 'http://localhost:3000', 'localhost:3000'],
  [['localhost:3000'], 'https://localhost:3000', 'localhost:3000'],
  [['localhost:3000'], 'http://localhost:3001', false],
  [['localhost:3000'], 'http://127.0.0.1:3000', false],
  [['localhost:3000'], 'http://[::1]:3000', false],
  [['localhost:3000'], 'http://localhost', false],
  [['localhost:3000'], 'http://app.localhost:3000', false],
  [['localhost:3000'], 'http://LOCALHOST:3000', false],
  [['localhost:443'], 'https://localhost', 'localhost:443'],
  [['localhost:443'], 'http://localhost:443', 'localhost:443'],
  [['localhost:80'], 'http://localhost', 'localhost:80'],
  [['localhost:80'], 'https://localhost:80', 'localhost:80'],
  // IDN: entries are punycode, Origins are only matched in punycode
  [['bücher.de'], 'https://xn--bcher-kva.de', 'xn--bcher-kva.de'],
  [['bücher.de'], 'https://shop.xn--bcher-kva.de', 'xn--bcher-kva.de'],
  [['bücher.de'], 'https://bücher.de', false],
  [['https://bücher.de'], 'https://bücher.de', false],
  // several entries: exact origins are looked up before domain entries
  [['app.example.com', 'localhost:3000', 'other.org'], 'https://www.other.org', 'other.org'],
  [['app.example.com', 'localhost:3000', 'other.org'], 'http://localhost:3000', 'localhost:3000'],
  [['app.example.com', 'localhost:3000', 'other.org'], 'http://app.example.com', 'app.example.com'],
  [['app.example.com', 'localhost:3000', 'other.org'], 'https://example.com', false],
  [['example.com', 'http://example.com'], 'http://example.com', 'http://example.com'],
  [['example.com', 'http://example.com'], 'http://www.example.com', false],
  [['example.com', 'https://example.com:8443'], 'https://example.com:8443', 'https://example.com:8443'],
  // stored entries that do not validate (any more) match nothing: fail closed
  [['*.example.com'], 'https://www.example.com', false],
  [['github.io', 'example.com'], 'https://foo.github.io', false],
  [['github.io', 'example.com'], 'https://example.com', 'example.com'],
  [[], 'https://example.com', false],
]

describe('compileOriginMatcher().match', () => {
  test.each(MATCH)('entries %j, Origin %p -> %p', (entries, origin, expected) => {
    const r = compileOriginMatcher(entries).match(origin)
    if (expected === false) {
      expect(r.allowed).toBe(false)
      if (!r.allowed) expect(r.reason).toContain(origin === null ? 'no Origin header' : JSON.stringify(origin))
    } else {
      expect(r).toEqual({ allowed: true, entry: expected })
    }
  })

  test('the same matcher gives the same answer twice (memoised denials included)', () => {
    const m = compileOriginMatcher(['example.com'])
    expect(m.match('https://evil.io')).toEqual(m.match('https://evil.io'))
    expect(m.match('https://www.example.com')).toEqual({ allowed: true, entry: 'example.com' })
    for (let i = 0; i < 100; i++) expect(m.match(`https://x${i}.io`).allowed).toBe(false)
    expect(m.match('https://evil.io').allowed).toBe(false)
  })

  test('entries are exposed as given', () => {
    expect(compileOriginMatcher(['example.com', 'localhost:3000']).entries).toEqual(['example.com', 'localhost:3000'])
  })

  test('the domain scan refuses hosts over 253 characters', () => {
    const long = `${'a'.repeat(60)}.`.repeat(4) + 'example.com' // 255 characters
    expect(compileOriginMatcher(['example.com']).match(`https://${long}`).allowed).toBe(false)
    const ok = `${'a'.repeat(60)}.`.repeat(3) + 'example.com'
    expect(compileOriginMatcher(['example.com']).match(`https://${ok}`).allowed).toBe(true)
  })

  test('a host of 253 characters under a domain entry matches; one of 254 does not', () => {
    const labels = `${'a'.repeat(63)}.`.repeat(3)
    const longest = `${labels}${'b'.repeat(49)}.example.com`
    expect(longest).toHaveLength(253)
    expect(compileOriginMatcher(['example.com']).match(`https://${longest}`)).toEqual({ allowed: true, entry: 'example.com' })
    expect(compileOriginMatcher(['example.com']).match(`https://${labels}${'b'.repeat(50)}.example.com`).allowed).toBe(false)
  })

  test('under a domain entry, each label is 1 to 63 of a-z, 0-9, "-" and "_", with no hyphen at either end', () => {
    const m = compileOriginMatcher(['example.com'])
    for (const host of ['a', 'z', '0', '9', 'app1', 'my-app', 'a_b', '_', 'x.y-z.0_9', 'a'.repeat(63), `${'a'.repeat(63)}.b`]) {
      expect(m.match(`https://${host}.example.com`)).toEqual({ allowed: true, entry: 'example.com' })
    }
    for (const host of ['a'.repeat(64), `b.${'a'.repeat(64)}`, 'a-', '-a', 'b.a-', 'a-.b', 'a~b', 'a{', '`', 'a/b', 'a:b', 'bü', 'A']) {
      expect(m.match(`https://${host}.example.com`).allowed).toBe(false)
    }
  })

  test('an origin two entries allow is named under the first one listed', () => {
    expect(compileOriginMatcher(['app.example.com', 'https://app.example.com']).match('https://app.example.com')).toEqual({
      allowed: true,
      entry: 'app.example.com',
    })
    expect(compileOriginMatcher(['https://app.example.com', 'app.example.com']).match('https://app.example.com')).toEqual({
      allowed: true,
      entry: 'https://app.example.com',
    })
  })
})

// [entries, Origin, fragments the denial reason must contain]
const REASONS: [string[], string | null, string[]][] = [
  [['example.com'], 'http://example.com', ['"http://example.com"', '"example.com"', 'requires https']],
  [['example.com'], 'https://www.example.com:8443', ['port 8443 differs', '"https://www.example.com:8443"']],
  [['https://app.example.com'], 'http://app.example.com', ['entry "https://app.example.com" requires https']],
  [['https://app.example.com:8443'], 'https://app.example.com', ['requires port 8443', 'port 443 differs']],
  [['app.example.com'], 'https://app.example.com:8443', ['port 8443 differs']],
  [['app.example.com'], 'https://x.app.example.com', ['not its subdomains']],
  [['localhost:3000'], 'http://localhost:3001', ['requires port 3000', 'port 3001 differs', '"localhost:3001"']],
  [['localhost:3000'], 'http://127.0.0.1:3000', ['localhost only', '"http://127.0.0.1:3000"']],
  [['example.com', 'localhost:3000'], 'https://evil.io', ['"example.com"', '"localhost:3000"', 'add "https://evil.io"']],
  [['example.com'], null, ['no Origin header', '"*"', '"example.com"']],
  [['example.com'], 'null', ['opaque', '"*"', '"example.com"']],
  [['example.com'], 'https://example.com.', ['dot', '"example.com"']],
  [['example.com'], 'https://bücher.de', ['punycode']],
  [['example.com'], 'https://Example.com', ['lower case']],
  [['example.com'], 'https://example.com:443', ['default port']],
  [['example.com'], 'https://a.io, https://b.io', ['several values']],
  [['example.com'], 'ftp://example.com', ['"ftp:"']],
  [['*.example.com', 'app.example.com'], 'https://www.example.com', ['invalid, ignored: "*.example.com"']],
  [[], 'https://example.com', ['no allowed origins']],
]

describe('denial reasons name the origin, the allowed list and a hint', () => {
  test.each(REASONS)('entries %j, Origin %p', (entries, origin, fragments) => {
    const r = compileOriginMatcher(entries).match(origin)
    expect(r.allowed).toBe(false)
    if (r.allowed) return
    for (const f of fragments) expect(r.reason).toContain(f)
  })

  test.each(REASONS)('entries %j, Origin %p: each entry is named once', (entries, origin) => {
    const r = compileOriginMatcher(entries).match(origin)
    if (r.allowed) return
    for (const entry of entries) expect(r.reason.split(JSON.stringify(entry)).length - 1).toBe(1)
  })
})

// The whole refusal reason, as the error's message gives it to a developer, for each way an
// Origin can fail: the fragments above say what a reason holds, these say it reads right.
const NONE = `, so it matches none of this key's entries, only "*" would (this key allows "example.com")`
const WHOLE_REASONS: [string[], string | null, string][] = [
  [
    ['example.com'],
    null,
    'the request has no Origin header, and only the entry "*" matches such requests (this key allows "example.com"); call from a browser page on an allowed origin, or use a private key from a server',
  ],
  [
    [],
    null,
    'the request has no Origin header, and only the entry "*" matches such requests (this key has no allowed origins); call from a browser page on an allowed origin, or use a private key from a server',
  ],
  [
    ['*.example.com', 'bad..com'],
    'https://a.io',
    'Origin "https://a.io" is not allowed: this key has no valid allowed origins (invalid, ignored: "*.example.com", "bad..com"). To allow it, add "https://a.io"',
  ],
  [
    ['*.example.com', 'app.example.com'],
    'https://www.example.com',
    'Origin "https://www.example.com" is not allowed: this key allows "app.example.com" (invalid, ignored: "*.example.com"). To allow it, add "https://www.example.com"',
  ],
  [['example.com'], '', `Origin "" is empty${NONE}`],
  [
    ['example.com'],
    'null',
    `Origin "null" is the opaque origin of a sandboxed frame, a file:// page or a privacy-sensitive redirect${NONE}`,
  ],
  [['example.com'], 'https://a.io, https://b.io', `Origin "https://a.io, https://b.io" holds several values${NONE}`],
  [['example.com'], 'https://a .io', `Origin "https://a .io" contains whitespace${NONE}`],
  [['example.com'], 'https://a\tb.io', `Origin "https://a\\tb.io" contains whitespace${NONE}`],
  [
    ['example.com'],
    'https://bücher.de',
    `Origin "https://bücher.de" has a raw non-ASCII host; browsers send the punycode form (xn--...)${NONE}`,
  ],
  [
    ['example.com'],
    'https://Example.com',
    `Origin "https://Example.com" contains upper-case letters; browsers send origins in lower case${NONE}`,
  ],
  [['example.com'], 'example.com', `Origin "example.com" is not of the form scheme://host[:port]${NONE}`],
  [['example.com'], '1https://example.com', `Origin "1https://example.com" is not of the form scheme://host[:port]${NONE}`],
  [['example.com'], 'https:/example.com', `Origin "https:/example.com" is not of the form scheme://host[:port]${NONE}`],
  [
    ['example.com'],
    'h2tps://example.com',
    `Origin "h2tps://example.com" has the scheme "h2tps:"; only http and https origins can be allowed${NONE}`,
  ],
  [['example.com'], 'https://u@example.com', `Origin "https://u@example.com" contains user info${NONE}`],
  [['example.com'], 'https://example.com/', `Origin "https://example.com/" contains a path, query or fragment${NONE}`],
  [['example.com'], 'https://example.com?x', `Origin "https://example.com?x" contains a path, query or fragment${NONE}`],
  [['example.com'], 'https://example.com#x', `Origin "https://example.com#x" contains a path, query or fragment${NONE}`],
  [['example.com'], 'https://example.com\\x', `Origin "https://example.com\\\\x" contains a path, query or fragment${NONE}`],
  [['example.com'], 'https://example.com.', `Origin "https://example.com." ends its host with a dot${NONE}`],
  [['example.com'], 'https://example.com:', `Origin "https://example.com:" has an invalid port${NONE}`],
  [['example.com'], 'https://example.com:0', `Origin "https://example.com:0" has an invalid port${NONE}`],
  [['example.com'], 'https://example.com:080', `Origin "https://example.com:080" has an invalid port${NONE}`],
  [['example.com'], 'https://example.com:65536', `Origin "https://example.com:65536" has an invalid port${NONE}`],
  [
    ['example.com'],
    'https://example.com:443',
    `Origin "https://example.com:443" names the default port 443, which browsers never send${NONE}`,
  ],
  [['example.com'], 'http://example.com:80', `Origin "http://example.com:80" names the default port 80, which browsers never send${NONE}`],
  [['example.com'], 'https://exa$mple.com', `Origin "https://exa$mple.com" does not have a valid host${NONE}`],
  [['example.com'], 'https://-a.com', `Origin "https://-a.com" does not have a valid host${NONE}`],
  // An Origin of 300 characters is shown whole; a longer one is cut there.
  [['example.com'], `https://${'a'.repeat(292)}`, `Origin "https://${'a'.repeat(292)}" does not have a valid host${NONE}`],
  [['example.com'], `https://${'a'.repeat(293)}`, `Origin "https://${'a'.repeat(292)}..." does not have a valid host${NONE}`],
  [
    ['example.com'],
    'http://www.example.com:8080',
    'Origin "http://www.example.com:8080" is not allowed: entry "example.com" requires https (the origin uses http). To allow it, add "http://www.example.com:8080"',
  ],
  [
    ['example.com'],
    'https://example.com:65535',
    'Origin "https://example.com:65535" is not allowed: entry "example.com" matches the default port 443 only (port 65535 differs). To allow it, add "https://example.com:65535"',
  ],
  [
    ['example.com'],
    'https://example.com:1',
    'Origin "https://example.com:1" is not allowed: entry "example.com" matches the default port 443 only (port 1 differs). To allow it, add "https://example.com:1"',
  ],
  [
    ['example.com'],
    'https://notexample.com',
    'Origin "https://notexample.com" is not allowed: this key allows "example.com". To allow it, add "https://notexample.com"',
  ],
  [
    ['app.example.com'],
    'https://app.example.com:8443',
    'Origin "https://app.example.com:8443" is not allowed: entry "app.example.com" matches the default ports only (port 8443 differs). To allow it, add "https://app.example.com:8443"',
  ],
  [
    ['app.example.com'],
    'https://x.app.example.com',
    'Origin "https://x.app.example.com" is not allowed: entry "app.example.com" matches that host only, not its subdomains. To allow it, add "https://x.app.example.com"',
  ],
  [
    ['app.example.com'],
    'https://example.com',
    'Origin "https://example.com" is not allowed: this key allows "app.example.com". To allow it, add "https://example.com"',
  ],
  [
    ['https://app.example.com'],
    'https://x.app.example.com',
    'Origin "https://x.app.example.com" is not allowed: entry "https://app.example.com" matches that exact origin only, not subdomains. To allow it, add "https://x.app.example.com"',
  ],
  [
    ['https://app.example.com'],
    'https://other.example.com',
    'Origin "https://other.example.com" is not allowed: this key allows "https://app.example.com". To allow it, add "https://other.example.com"',
  ],
  [
    ['https://app.example.com'],
    'http://app.example.com',
    'Origin "http://app.example.com" is not allowed: entry "https://app.example.com" requires https (the origin uses http) and requires port 443 (port 80 differs). To allow it, add "http://app.example.com"',
  ],
  [
    ['http://example.com'],
    'https://example.com',
    'Origin "https://example.com" is not allowed: entry "http://example.com" requires http (the origin uses https) and requires port 80 (port 443 differs). To allow it, add "https://example.com"',
  ],
  [
    ['https://app.example.com:8443'],
    'https://app.example.com',
    'Origin "https://app.example.com" is not allowed: entry "https://app.example.com:8443" requires port 8443 (port 443 differs). To allow it, add "https://app.example.com"',
  ],
  [
    ['https://[::1]:8443'],
    'https://[::1]',
    'Origin "https://[::1]" is not allowed: entry "https://[::1]:8443" requires port 8443 (port 443 differs). To allow it, add "https://[::1]"',
  ],
  [
    ['localhost:3000'],
    'https://localhost',
    'Origin "https://localhost" is not allowed: entry "localhost:3000" requires port 3000 (port 443 differs). To allow it, add "localhost:443"',
  ],
  [
    ['localhost:3000'],
    'http://[::1]:3000',
    'Origin "http://[::1]:3000" is not allowed: entry "localhost:3000" matches the name localhost only, not the address [::1]. To allow it, open the page as localhost, or add "http://[::1]:3000"',
  ],
  [
    ['localhost:3000'],
    'http://128.0.0.1:3000',
    'Origin "http://128.0.0.1:3000" is not allowed: this key allows "localhost:3000". To allow it, add "http://128.0.0.1:3000"',
  ],
  // Entries an Origin only looks like: no hint.
  [
    ['example.com'],
    'http://notexample.com',
    'Origin "http://notexample.com" is not allowed: this key allows "example.com". To allow it, add "http://notexample.com"',
  ],
  [
    ['https://app.example.com'],
    'https://other.com:8443',
    'Origin "https://other.com:8443" is not allowed: this key allows "https://app.example.com". To allow it, add "https://other.com:8443"',
  ],
  [
    ['localhost:3000'],
    'http://10.127.0.1:3000',
    'Origin "http://10.127.0.1:3000" is not allowed: this key allows "localhost:3000". To allow it, add "http://10.127.0.1:3000"',
  ],
  // One difference named, not two.
  [
    ['app.example.com'],
    'https://x.app.example.com:8443',
    'Origin "https://x.app.example.com:8443" is not allowed: entry "app.example.com" matches that host only, not its subdomains. To allow it, add "https://x.app.example.com:8443"',
  ],
  [
    ['https://app.example.com:80'],
    'http://app.example.com',
    'Origin "http://app.example.com" is not allowed: entry "https://app.example.com:80" requires https (the origin uses http). To allow it, add "http://app.example.com"',
  ],
  // Several entries nearly match: each is named with its reason, and a fix two of them share is said once.
  [
    ['example.com', 'localhost:3000', 'https://other.com'],
    'http://example.com',
    `Origin "http://example.com" is not allowed: entry "example.com" requires https (the origin uses http); the key's other entries: "localhost:3000", "https://other.com". To allow it, add "http://example.com"`,
  ],
  [
    ['example.com', 'www.example.com'],
    'https://www.example.com:8443',
    'Origin "https://www.example.com:8443" is not allowed: entry "example.com" matches the default port 443 only (port 8443 differs); entry "www.example.com" matches the default ports only (port 8443 differs). To allow it, add "https://www.example.com:8443"',
  ],
  [
    ['localhost:3000', 'localhost:4000'],
    'http://localhost:3001',
    'Origin "http://localhost:3001" is not allowed: entry "localhost:3000" requires port 3000 (port 3001 differs); entry "localhost:4000" requires port 4000 (port 3001 differs). To allow it, add "localhost:3001"',
  ],
  [
    ['localhost:3000', 'http://127.0.0.1:4000'],
    'http://127.0.0.1:3000',
    'Origin "http://127.0.0.1:3000" is not allowed: entry "localhost:3000" matches the name localhost only, not the address 127.0.0.1; entry "http://127.0.0.1:4000" requires port 4000 (port 3000 differs). To allow it, open the page as localhost, or add "http://127.0.0.1:3000"',
  ],
]

describe('denial reasons, whole', () => {
  test.each(WHOLE_REASONS)('entries %j, Origin %p', (entries, origin, reason) => {
    expect(compileOriginMatcher(entries).match(origin)).toEqual({ allowed: false, reason })
  })
})
