/**
 * Page views sent as fast as `concurrency` clients can, each with an anonymousId of its own,
 * so a test can tell exactly which acknowledged (202) events must be stored. An event whose
 * request failed (the server went away) is not sent again: the client goes on to the next.
 */
export function sendPageViews(options: { base: () => string; key: string; origin: string; concurrency: number }) {
  const acknowledged: string[] = []
  const refused: number[] = []
  let failures = 0
  let running = true
  let next = 0

  async function client(): Promise<void> {
    while (running) {
      const id = `visitor-${next++}`
      try {
        const response = await fetch(`${options.base()}/api/v0/analytics`, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${options.key}`,
            origin: options.origin,
            'content-type': 'application/json',
          },
          body: JSON.stringify({ eventType: 'page_view', url: `${options.origin}/`, anonymousId: id }),
          signal: AbortSignal.timeout(10_000),
        })
        await response.arrayBuffer()
        if (response.status === 202) acknowledged.push(id)
        else refused.push(response.status)
      } catch {
        failures++
        if (!running) return
        await Bun.sleep(5)
      }
    }
  }

  const clients = Array.from({ length: options.concurrency }, client)
  return {
    get acknowledged(): readonly string[] {
      return acknowledged
    },
    get failures() {
      return failures
    },
    refused,
    async stop() {
      running = false
      await Promise.all(clients)
    },
  }
}
