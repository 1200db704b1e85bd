// The dashboard's script, served built as /dashboard/assets/dashboard.js (src/dashboard/assets.ts).
// Pages work without it; it adds copy buttons, checks allowed origins while they are typed,
// runs the origin tester in place, and keeps the events list live.
// A module for TypeScript only: src/dashboard/assets.ts drops the next line from the browser build.
export {}

interface OriginCheck {
  results: { ok: boolean; reason?: string }[]
}

interface OriginTest {
  allowed: boolean
  origin: string
  entry?: string
  reason?: string
  keyState: string
}

interface FirstRequest {
  receivedAt?: string
  refused?: { origin: string; lastSeenAt: string }
}

interface LiveEvents {
  error?: { message?: string }
  newest: string
  data: unknown[]
  html: string
  more: boolean
}

const JSON_REQUEST: RequestInit = { headers: { accept: 'application/json' }, credentials: 'same-origin' }

function status(el: Element, text: string): void {
  const region = el.closest('section, form, main')?.querySelector('.copy-status') ?? document.querySelector('.copy-status')
  if (region) region.textContent = text
}

function markField(control: Element, invalid: boolean): void {
  control.setAttribute('aria-invalid', invalid ? 'true' : 'false')
  control.closest('.field')?.classList.toggle('has-error', invalid)
}

// Copy buttons: data-copy names the field whose value is copied.
function copyButtons(): void {
  for (const button of document.querySelectorAll<HTMLElement>('[data-copy]')) {
    button.addEventListener('click', () => {
      const field = document.getElementById(button.getAttribute('data-copy') ?? '') as HTMLInputElement | HTMLTextAreaElement | null
      if (!field) return
      const label = field.labels?.[0]?.textContent ?? 'Value'
      const done = () => status(button, label + ' copied to the clipboard.')
      const fallback = () => {
        field.focus()
        field.select()
        try {
          document.execCommand('copy')
          done()
        } catch {
          status(button, 'Select the text and copy it with Ctrl+C.')
        }
      }
      if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(field.value).then(done, fallback)
      else fallback()
    })
  }
}

// Allowed origins: each line is checked by the server's own parser while it is typed.
function originChecks(): void {
  for (const box of document.querySelectorAll<HTMLTextAreaElement>('textarea[data-origin-check]')) {
    const list = document.getElementById('origins-error')
    const form = box.form
    let timer: ReturnType<typeof setTimeout> | undefined
    let seq = 0
    let invalid = 0
    const lines = () =>
      box.value
        .split(/\r\n|\r|\n/)
        .map((line) => line.trim())
        .filter((line) => line !== '')
    const show = (results: OriginCheck['results']) => {
      if (list) list.textContent = ''
      invalid = 0
      for (const result of results) {
        if (result.ok) continue
        invalid++
        const item = document.createElement('li')
        item.textContent = result.reason ?? ''
        list?.appendChild(item)
      }
      markField(box, invalid > 0)
    }
    const check = (): Promise<void> => {
      const entries = lines()
      const mine = ++seq
      if (entries.length === 0) {
        show([])
        return Promise.resolve()
      }
      const query = entries.map((entry) => 'entry=' + encodeURIComponent(entry)).join('&')
      return fetch(box.getAttribute('data-origin-check') + '?' + query, JSON_REQUEST)
        .then((response) => (response.ok ? (response.json() as Promise<OriginCheck>) : null))
        .then((body) => {
          if (body && mine === seq) show(body.results)
        })
        .catch(() => {})
    }
    box.addEventListener('input', () => {
      clearTimeout(timer)
      timer = setTimeout(check, 300)
    })
    box.addEventListener('blur', () => {
      clearTimeout(timer)
      void check()
    })
    form?.addEventListener('submit', (event) => {
      if (invalid > 0) {
        event.preventDefault()
        box.focus()
      }
    })
  }
}

function code(text: string): HTMLElement {
  const element = document.createElement('code')
  element.textContent = text
  return element
}

// Origin tester: answers in place; without the script the form reloads the page.
function originTester(): void {
  for (const form of document.querySelectorAll<HTMLFormElement>('form[data-origin-tester]')) {
    const result = document.getElementById('tester-result')
    form.addEventListener('submit', (event) => {
      event.preventDefault()
      const origin = (form.elements.namedItem('origin') as HTMLInputElement).value.trim()
      fetch(form.getAttribute('data-origin-tester') + '?origin=' + encodeURIComponent(origin), JSON_REQUEST)
        .then((response) => {
          if (!response.ok) throw new Error('HTTP ' + response.status)
          return response.json() as Promise<OriginTest>
        })
        .then((body) => {
          const box = document.createElement('div')
          box.className = 'result ' + (body.allowed ? 'ok' : 'refused')
          const p = document.createElement('p')
          const strong = document.createElement('strong')
          const shown = body.origin === '' ? 'a request without an Origin header' : body.origin
          if (body.allowed) {
            strong.textContent = 'Accepted.'
            p.append(strong, ' The entry ', code(body.entry ?? ''), ' matches ', code(shown), '.')
          } else {
            strong.textContent = 'Refused'
            p.append(strong, ' (403 origin_not_allowed). ' + body.reason)
          }
          box.appendChild(p)
          if (body.keyState !== 'active') {
            const note = document.createElement('p')
            note.className = 'small'
            note.textContent = 'Note: this key is ' + body.keyState + ', so every request is refused (401) whatever its origin.'
            box.appendChild(note)
          }
          result?.replaceChildren(box)
        })
        .catch(() => form.submit())
    })
  }
}

// First request: ask the dashboard every 2 s (for up to 15 minutes) until the key's first
// accepted request, then say when it came. Only this dashboard is asked, nothing else.
function firstRequest(): void {
  for (const panel of document.querySelectorAll<HTMLElement>('[data-first-request]')) {
    const url = panel.getAttribute('data-first-request') ?? ''
    const state = panel.querySelector('.state')
    const detail = panel.querySelector('.detail')
    let tries = 0
    const stamp = (iso: string) => iso.slice(0, 16).replace('T', ' ') + ' UTC'
    const again = () => {
      if (++tries < 450) setTimeout(poll, 2000)
    }
    const poll = () => {
      fetch(url, JSON_REQUEST)
        .then((response) => (response.ok ? (response.json() as Promise<FirstRequest>) : null))
        .then((body) => {
          if (body?.receivedAt) {
            panel.classList.remove('waiting')
            panel.classList.add('received')
            if (state) {
              state.textContent = ''
              const strong = document.createElement('strong')
              strong.textContent = 'First request received at ' + stamp(body.receivedAt) + '.'
              state.appendChild(strong)
            }
            if (detail) detail.textContent = 'The key works: its requests are counted under Requests below.'
            return
          }
          if (body?.refused && detail) {
            detail.textContent =
              'A request from ' +
              body.refused.origin +
              ' was refused at ' +
              stamp(body.refused.lastSeenAt) +
              ': that origin is not in the allowed list (see Refused origins below).'
          }
          again()
        }, again)
    }
    setTimeout(poll, 1000)
  }
}

// Phone widths: the navigation folds behind a Menu button (without the script it stays open above the page).
function menuButton(): void {
  const menu = document.querySelector<HTMLElement>('.menu-button')
  const sidenav = document.getElementById('sidenav')
  if (!menu || !sidenav) return
  menu.hidden = false
  document.body.classList.add('has-menu')
  menu.addEventListener('click', () => {
    const open = sidenav.classList.toggle('open')
    menu.setAttribute('aria-expanded', open ? 'true' : 'false')
    if (open) sidenav.querySelector<HTMLElement>('a')?.focus()
  })
}

// Choosing a password: the two must match, said before anything is sent (the server checks again).
function passwordPairs(): void {
  for (const form of document.querySelectorAll<HTMLFormElement>('form[data-password-pair]')) {
    const first = form.elements.namedItem('password') as HTMLInputElement
    const second = form.elements.namedItem('confirm') as HTMLInputElement
    const error = document.getElementById('confirm-error')
    const said = 'The two passwords differ; type the same password again.'
    const mark = (differs: boolean) => {
      markField(second, differs)
      if (error) error.textContent = differs ? said : ''
    }
    const recheck = () => {
      if (second.getAttribute('aria-invalid') === 'true') mark(first.value !== second.value)
    }
    second.addEventListener('input', recheck)
    first.addEventListener('input', recheck)
    form.addEventListener('submit', (event) => {
      if (first.value === second.value) return
      event.preventDefault()
      error?.setAttribute('role', 'alert')
      mark(true)
      second.focus()
    })
  }
}

// Events: while the tab is visible, ask every 2 s for events newer than the newest shown
// and put them on top; paused while hidden, stopped after 15 minutes of asking, at most
// 500 on the page. Only this dashboard is asked.
function liveEvents(): void {
  for (const live of document.querySelectorAll<HTMLElement>('[data-events-live]')) {
    const list = document.getElementById('events')
    const text = live.querySelector('.text')
    const url = live.getAttribute('data-events-live') ?? ''
    let since = live.getAttribute('data-since') ?? ''
    let timer: ReturnType<typeof setTimeout> | undefined
    let asked = 0
    let stopped = false
    let busy = false
    let lastNews = ''
    // Every event the live view added since the page opened: the count adds up over the polls.
    let added = 0
    const LIVE = 'Live: new events appear at the top as they arrive.'
    const say = (words: string, isLive: boolean) => {
      if (text) text.textContent = words
      live.classList.toggle('paused', !isLive)
    }
    const stop = (words: string) => {
      stopped = true
      clearTimeout(timer)
      say(words, false)
    }
    const later = () => {
      clearTimeout(timer)
      if (!stopped && !document.hidden) timer = setTimeout(ask, 2000)
    }
    const ask = () => {
      if (stopped || busy || document.hidden) return
      if (++asked > 450) {
        stop('Live view stopped after 15 minutes. Reload the page to resume it.')
        return
      }
      busy = true
      fetch(url + '&since=' + encodeURIComponent(since), JSON_REQUEST)
        .then((response) => (response.json() as Promise<LiveEvents>).then((body) => ({ ok: response.ok, body })))
        .then(
          ({ ok, body }) => {
            busy = false
            if (!ok) {
              stop((body?.error ? body.error.message + ' ' : '') + 'Live view stopped.')
              return
            }
            since = body.newest
            if (body.data.length > 0 && list) {
              document.getElementById('no-events')?.remove()
              list.insertAdjacentHTML('afterbegin', body.html)
              while (list.children.length > 500) list.lastElementChild?.remove()
              added += body.data.length
              lastNews =
                ' ' +
                added +
                ' new since the page opened, the latest at ' +
                new Date().toISOString().slice(11, 19) +
                ' UTC' +
                (body.more ? '; more arrived than shown: reload to see them all.' : '.')
            }
            say(LIVE + lastNews, true)
            later()
          },
          () => {
            busy = false
            later()
          },
        )
    }
    document.addEventListener('visibilitychange', () => {
      if (stopped) return
      if (document.hidden) {
        clearTimeout(timer)
        say('Live view paused while this tab is hidden.', false)
      } else {
        say(LIVE + lastNews, true)
        ask()
      }
    })
    say(LIVE, true)
    later()
  }
}

copyButtons()
originChecks()
originTester()
firstRequest()
menuButton()
passwordPairs()
liveEvents()
// After a refused submit, take keyboard focus to the list of problems.
document.getElementById('error-summary')?.focus()
