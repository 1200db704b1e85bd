/**
 * Sign-ins as a browser sends them, against a listening server (in process or a child
 * process) that believes X-Forwarded-For from the test (TRUST_PROXY 127.0.0.1): the form's
 * token and cookie once, then as many posts as asked, all at once.
 */
export async function signInForm(base: string): Promise<{ cookie: string; csrf: string }> {
  const response = await fetch(`${base}/dashboard/sign-in`)
  const page = await response.text()
  const cookie = response.headers
    .getSetCookie()
    .map((header) => header.split(';')[0]!)
    .find((pair) => pair.startsWith('keygate_sign_in='))
  const csrf = /<input type="hidden" name="csrf" value="([^"]*)"/.exec(page)?.[1]
  if (!cookie || !csrf) throw new Error(`no sign-in form at ${base}: ${response.status}`)
  return { cookie, csrf }
}

/** One sign-in from `address`; answers the status (303 signed in, 401 wrong, 429 throttled). */
export async function signInFrom(base: string, form: { cookie: string; csrf: string }, email: string, password: string, address: string) {
  const response = await fetch(`${base}/dashboard/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      origin: base,
      'sec-fetch-site': 'same-origin',
      cookie: form.cookie,
      'x-forwarded-for': address,
    },
    body: new URLSearchParams({ csrf: form.csrf, email, password }).toString(),
    signal: AbortSignal.timeout(30_000),
  })
  await response.arrayBuffer()
  return response.status
}
