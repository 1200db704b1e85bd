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
  /** Signed by the business's server: lets this page update a stored person. */
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
// Browsers refuse keepalive bodies past 64 KiB (in flight, per page), and the API refuses a
// public key's bodies past 64 KiB: every batch stays under this.
const KEEPALIVE_LIMIT = 60000
const EVENTS_PATH = '/api/v0/analytics'
const QUEUE_KEY = 'keygate_queue:'
const LEASE_KEY = 'keygate_lease:'
const OUTCOME_KEY = 'keygate_outcome:'
const LOCK_NAME = 'keygate_send'
const LEASE_MS = 10000
const MAX_QUEUED = 1000
const MAX_QUEUE_BYTES = 1 << 20
const MAX_BATCH = 500
const MAX_BACKOFF = 30000
// Answers that say "try again later"; any other 4xx is final.
const RETRY_STATUSES = [408, 429, 500, 502, 503, 504]

interface QueuedEvent {
  id: string
  eventType: string
  url: string
  referrer?: string
  anonymousId: string
  personId?: string
  properties?: Properties
  timestamp: string
}

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

  function send(path: string, payload: object, keepalive?: boolean): Promise<Response | null> {
    const body = JSON.stringify(payload)
    return fetch(apiBase + path, {
      method: 'POST',
      // Browsers refuse keepalive bodies past 64 KiB; bigger ones go without.
      keepalive: keepalive ?? new Blob([body]).size < KEEPALIVE_LIMIT,
      headers: { Authorization: 'Bearer ' + key, 'Content-Type': 'application/json' },
      body,
    }).then(
      (response) => response,
      (reason: unknown) => {
        console.warn(PREFIX, `request to ${apiBase + path} failed:`, String(reason))
        return null
      },
    )
  }

  // Logs a refusal as "[keygate] CODE: message"; true when the answer is final (2xx or such a 4xx).
  async function report(response: Response | null): Promise<boolean> {
    if (!response) return false
    if (response.ok) return true
    const error = ((await response.json().catch(() => null)) as ServerError | null)?.error
    const retry = RETRY_STATUSES.includes(response.status)
    ;(retry ? console.warn : console.error)(
      PREFIX,
      error?.code ? `${error.code}: ${error.message}` : `HTTP ${response.status}`,
      error?.requestId ? `(request ${error.requestId})` : '',
    )
    return !retry && response.status < 500
  }

  function oneShot(path: string, payload: object): Promise<boolean> {
    if (!key) return Promise.resolve(false)
    return send(path, payload).then(async (response) => (await report(response)) && !!response?.ok)
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

  // The queue: in localStorage, shared by the origin's tabs and kept
  // across pages until sent or dropped by the bound; in `memory` where storage throws.
  const queueKey = QUEUE_KEY + key.slice(0, 16) + ':'
  const leaseKey = LEASE_KEY + key.slice(0, 16)
  const outcomeKey = OUTCOME_KEY + key.slice(0, 16)
  const tab = randomId()
  let memory: QueuedEvent[] | null = null
  // This page's track() promises, settled when their event is committed or refused.
  const waiting = new Map<string, (committed: boolean) => void>()
  let attempt = 0
  let timer: ReturnType<typeof setTimeout> | undefined
  let sending = false

  // One localStorage entry per event (`keygate_queue:<key prefix>:<id>`): Chromium syncs
  // storage between tabs' processes lazily, so a shared array rewritten by two tabs would
  // lose one tab's events; single entries are only ever added or removed whole.
  function readQueue(): QueuedEvent[] {
    if (memory) return memory
    try {
      const events: QueuedEvent[] = []
      for (let index = 0; index < localStorage.length; index++) {
        const name = localStorage.key(index)
        if (name?.startsWith(queueKey)) events.push(JSON.parse(localStorage.getItem(name)!) as QueuedEvent)
      }
      return events.sort((a, b) => (a.timestamp < b.timestamp ? -1 : a.timestamp > b.timestamp ? 1 : 0))
    } catch {
      return (memory = [])
    }
  }

  function add(event: QueuedEvent) {
    const events = [...readQueue(), event]
    let bytes = JSON.stringify(events).length
    const dropped: string[] = []
    while (events.length > MAX_QUEUED || bytes > MAX_QUEUE_BYTES) {
      const oldest = events.shift()!
      bytes -= JSON.stringify(oldest).length + 1
      dropped.push(oldest.id)
    }
    if (dropped.length) {
      console.warn(PREFIX, `queue full: dropped the ${dropped.length} oldest events`)
      finish(dropped, false)
    }
    if (memory) return void (memory = events)
    try {
      localStorage.setItem(queueKey + event.id, JSON.stringify(event))
    } catch {
      memory = events
    }
  }

  function remove(ids: string[]) {
    if (memory) return void (memory = memory.filter((event) => !ids.includes(event.id)))
    for (const id of ids) forget(queueKey + id)
  }

  function settle(ids: string[], committed: boolean) {
    for (const id of ids) {
      waiting.get(id)?.(committed)
      waiting.delete(id)
    }
  }

  // Events leave the shared queue committed or refused for good: the tabs whose track()
  // waits on them hear which through one localStorage entry (its `storage` event), told
  // before the events leave, so no tab ever takes a vanished event for a committed one.
  function finish(ids: string[], committed: boolean) {
    if (!memory) save(outcomeKey, JSON.stringify({ ids, committed, nonce: randomId() }))
    remove(ids)
    settle(ids, committed)
  }

  addEventListener('storage', (event) => {
    const change = event as StorageEvent
    if (change.key !== outcomeKey || !change.newValue) return
    try {
      const outcome = JSON.parse(change.newValue) as { ids: string[]; committed: boolean }
      settle(outcome.ids, outcome.committed === true)
    } catch {}
  })

  function schedule(ms: number) {
    clearTimeout(timer)
    timer = setTimeout(flush, ms)
  }

  // One tab sends at a time: a Web Lock where there is one, else a lease in localStorage
  // (memory queues are the page's own, so they need neither).
  function flush() {
    if (sending || !key) return
    try {
      const locks = navigator.locks
      if (memory) void sendAll()
      else if (locks) void locks.request(LOCK_NAME, { ifAvailable: true }, (lock) => (lock ? sendAll() : busy()))
      else if (lease(Date.now() + LEASE_MS)) void sendAll().finally(() => lease(0))
      else busy()
    } catch (reason) {
      // Runs from timers too, where a throw would reach the page.
      console.warn(PREFIX, String(reason))
      schedule(MAX_BACKOFF)
    }
  }

  // Another tab is sending; it tells this one what became of this page's events (finish).
  function busy() {
    if (readQueue().length) schedule(1000)
  }

  function lease(until: number): boolean {
    const held = JSON.parse(load(leaseKey) || '{}') as { tab?: string; until?: number }
    if (held.tab !== tab && (held.until ?? 0) > Date.now()) return false
    save(leaseKey, JSON.stringify({ tab, until }))
    return JSON.parse(load(leaseKey) || '{}').tab === tab
  }

  async function sendAll(): Promise<void> {
    sending = true
    try {
      for (;;) {
        // Within the API's body limit for public keys (64 KiB): one event alone may be over it, and is refused for good.
        const batch = batchWithin(readQueue(), 1)
        const ids = batch.map((event) => event.id)
        if (!batch.length) return void (attempt = 0)
        const response = await send(EVENTS_PATH, { events: batch })
        if (!(await report(response))) {
          // Jittered exponential backoff, 1 s to 30 s, never before Retry-After.
          const backoff = Math.min(MAX_BACKOFF, 1000 * 2 ** attempt++) * (0.5 + Math.random() / 2)
          const after = Number(response?.headers.get('retry-after')) * 1000 || 0
          return schedule(Math.max(backoff, after))
        }
        attempt = 0
        finish(ids, response!.ok)
      }
    } finally {
      sending = false
    }
  }

  function enqueue(eventType: string, properties?: Properties, referrer?: string): Promise<boolean> {
    if (!key) return Promise.resolve(false)
    const event: QueuedEvent = {
      id: randomId(),
      eventType,
      url: location.href.slice(0, MAX_URL),
      referrer: referrer?.slice(0, MAX_URL),
      anonymousId,
      personId: personId ?? undefined,
      properties,
      timestamp: new Date().toISOString(),
    }
    const committed = new Promise<boolean>((resolve) => waiting.set(event.id, resolve))
    add(event)
    // A burst of calls goes out as one batch.
    if (!attempt) schedule(0)
    return committed
  }

  /** The oldest events whose batch stays under KEEPALIVE_LIMIT bytes, and at least `least` of them. */
  function batchWithin(queue: QueuedEvent[], least: number): QueuedEvent[] {
    const batch: QueuedEvent[] = []
    // `{"events":[` and `]}`, then each event's UTF-8 bytes and its comma.
    let bytes = 13
    for (const event of queue.slice(0, MAX_BATCH)) {
      bytes += new Blob([JSON.stringify(event)]).size + 1
      if (batch.length >= least && bytes > KEEPALIVE_LIMIT) break
      batch.push(event)
    }
    return batch
  }

  // The tab may close before anything else runs: send what is queued with keepalive. A
  // copy may reach the service twice (here and from the next page); ids make it count once.
  addEventListener('pagehide', () => {
    if (!key) return
    const batch = batchWithin(readQueue(), 0)
    if (batch.length)
      void send(EVENTS_PATH, { events: batch }, true).then(async (response) => {
        if (await report(response))
          finish(
            batch.map((event) => event.id),
            response!.ok,
          )
      })
  })

  const api = {
    version: 0,
    anonymousId: () => anonymousId,
    track: guard((eventType: string, properties?: Properties) => enqueue(eventType, properties)),
    page: guard(() => {
      const referrer = lastUrl || document.referrer || undefined
      lastUrl = location.href
      return enqueue('page_view', undefined, referrer)
    }),
    identify: guard((person: Person) => {
      if (person?.externalId) personId = save(PERSON_ID_KEY, person.externalId)
      return oneShot('/api/v0/audience/people', person)
    }),
    // On sign-out: later events belong to a new anonymous visitor and no person.
    reset() {
      personId = null
      forget(PERSON_ID_KEY)
      anonymousId = save(ANONYMOUS_ID_KEY, randomId())
    },
    addToList: guard((slug: string, email: string) =>
      oneShot(`/api/v0/audience/lists/${encodeURIComponent(slug)}/people`, { people: [{ email }] }),
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

  // Events an earlier page (or a closed tab) queued go out now.
  flush()
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

// A v4 uuid. crypto.randomUUID exists only on secure pages; getRandomValues everywhere.
function randomId(): string {
  if (crypto.randomUUID) return crypto.randomUUID()
  const bytes = crypto.getRandomValues(new Uint8Array(16))
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = Array.from(bytes, (byte) => byte.toString(16).padStart(2, '0')).join('')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
