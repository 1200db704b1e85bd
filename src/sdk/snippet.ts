// The browser tracking snippet, served minified as GET /sdk/v0.js (src/sdk/index.ts) and
// documented in docs/snippet.md. It runs inside pages we do not control, so it never
// throws into the page: every failure ends as one console line prefixed "[keygate]".
// A module for TypeScript only: src/sdk/index.ts drops the next line from the browser build.
export {}

type Properties = Record<string, unknown>
type Command = [string, ...unknown[]]

interface Person {
  email?: string
  externalId?: string
  /** Signed by the business's server (contract section 12): lets this page update a stored person. */
  identityHash?: string
  firstName?: string
  lastName?: string
  properties?: Properties
}

interface ServerError {
  error?: { code?: string; message?: string; requestId?: string }
}

const PREFIX = '[keygate]'
const ANONYMOUS_ID_KEY = 'keygate_anonymous_id'
const PERSON_ID_KEY = 'keygate_person_id'
// The API refuses longer url and referrer fields; a cut URL still names the page.
const MAX_URL = 2048
// Browsers refuse keepalive bodies past 64 KiB (in flight, per page); bigger ones go without.
const KEEPALIVE_LIMIT = 60000

const win = window as unknown as { keygate?: unknown }
const queued = win.keygate

// Loaded twice on one page: the first copy keeps working, the second does nothing.
if (!(queued && !Array.isArray(queued))) {
  try {
    start(Array.isArray(queued) ? (queued as Command[]) : [])
  } catch (reason) {
    console.error(PREFIX, String(reason))
  }
}

function start(queue: Command[]) {
  // `async` scripts still see themselves as currentScript while they run.
  const script = (document.currentScript ?? document.querySelector('script[data-key]')) as HTMLScriptElement | null
  const key = script?.dataset.key ?? ''
  const apiBase = (script?.dataset.api || (script?.src ? new URL(script.src).origin : location.origin)).replace(/\/+$/, '')
  let anonymousId = load(ANONYMOUS_ID_KEY) ?? save(ANONYMOUS_ID_KEY, randomId())
  // The person's own id (externalId) once identify() named it: sent as each event's personId.
  let personId = load(PERSON_ID_KEY)
  let lastUrl = ''

  if (!key) console.error(PREFIX, 'missing data-key: add data-key="pk_..." (your public key) to the snippet\'s <script> tag')

  function send(path: string, payload: object): Promise<boolean> {
    if (!key) return Promise.resolve(false)
    const body = JSON.stringify(payload)
    return fetch(apiBase + path, {
      method: 'POST',
      keepalive: new Blob([body]).size < KEEPALIVE_LIMIT,
      headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' },
      body,
    }).then(
      async (response) => {
        if (response.ok) return true
        const error = ((await response.json().catch(() => null)) as ServerError | null)?.error
        // Retry-later answers are warnings; anything else needs the developer's fix.
        const log = response.status === 429 || response.status >= 500 ? console.warn : console.error
        log(
          PREFIX,
          error?.code ? `${error.code}: ${error.message}` : `HTTP ${response.status} from ${apiBase + path}`,
          error?.requestId ? `(request ${error.requestId})` : '',
        )
        return false
      },
      (reason: unknown) => {
        console.warn(PREFIX, `request to ${apiBase + path} failed:`, String(reason))
        return false
      },
    )
  }

  function guard<A extends unknown[]>(method: (...args: A) => Promise<boolean>) {
    return (...args: A): Promise<boolean> => {
      try {
        return method(...args)
      } catch (reason) {
        console.warn(PREFIX, String(reason))
        return Promise.resolve(false)
      }
    }
  }

  function sendEvent(eventType: string, properties?: Properties, referrer?: string) {
    return send('/api/v0/analytics', {
      eventType,
      url: location.href.slice(0, MAX_URL),
      referrer: referrer?.slice(0, MAX_URL),
      anonymousId,
      personId: personId ?? undefined,
      properties,
    })
  }

  const api = {
    version: 0,
    anonymousId: () => anonymousId,
    track: guard((eventType: string, properties?: Properties) => sendEvent(eventType, properties)),
    page: guard(() => {
      const referrer = lastUrl || document.referrer || undefined
      lastUrl = location.href
      return sendEvent('page_view', undefined, referrer)
    }),
    identify: guard((person: Person) => {
      if (person?.externalId) personId = save(PERSON_ID_KEY, person.externalId)
      return send('/api/v0/audience/people', person)
    }),
    // On sign-out: later events belong to a new anonymous visitor and no person.
    reset() {
      personId = null
      forget(PERSON_ID_KEY)
      anonymousId = save(ANONYMOUS_ID_KEY, randomId())
    },
    addToList: guard((slug: string, email: string) =>
      send(`/api/v0/audience/lists/${encodeURIComponent(slug)}/people`, { people: [{ email }] }),
    ),
    // Calls queued before the script loaded, as ['track', 'signup', {...}], run on load;
    // later pushes run at once, so page code may keep using push.
    push(command: Command) {
      try {
        const method = api[command[0] as 'track'] as ((...args: unknown[]) => unknown) | undefined
        if (typeof method === 'function') method(...command.slice(1))
        else console.warn(PREFIX, 'unknown command', command[0])
      } catch (reason) {
        console.warn(PREFIX, String(reason))
      }
    },
  }
  win.keygate = api

  function trackIfMoved() {
    if (location.href !== lastUrl) void api.page()
  }
  for (const name of ['pushState', 'replaceState'] as const) {
    const original = history[name]
    history[name] = function (this: History, ...args: Parameters<History['pushState']>) {
      const result = original.apply(this, args)
      trackIfMoved()
      return result
    }
  }
  addEventListener('popstate', trackIfMoved)

  void api.page()
  for (const command of queue) api.push(command)
}

// Storage may be blocked (sandboxed frames, privacy modes): values then live as long as
// the page does, in the snippet's variables.
function load(name: string): string | null {
  try {
    return localStorage.getItem(name)
  } catch {
    return null
  }
}

function save(name: string, value: string): string {
  try {
    localStorage.setItem(name, value)
  } catch {}
  return value
}

function forget(name: string): void {
  try {
    localStorage.removeItem(name)
  } catch {}
}

// A v4 uuid. crypto.randomUUID exists only on https pages; getRandomValues everywhere.
function randomId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
