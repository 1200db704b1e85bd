/** What a first start made that its operator must keep; each part only when made now. */
export interface FirstStart {
  /** The admin token, when this start generated it, and the file that keeps it. */
  adminToken?: { token: string; file: string }
  /** The first owner's one-time sign-in link, when this start created the first business. */
  signIn?: { url: string; email: string; businessName: string; expiresAt: Date }
  /** Where this service answers, for the CLI (KEYGATE_URL), whatever PORT says. */
  serviceUrl?: string
}

/**
 * A plain block for people, written to stderr besides the JSON log lines: each secret on a
 * line of its own, so it can be copied whatever LOG_FORMAT says and wherever the lines
 * land. Null when this start made nothing to show.
 */
export function firstStartNotice(made: FirstStart): string | null {
  if (made.adminToken === undefined && made.signIn === undefined) return null
  const lines = ['', 'keygate: this start made what you need to begin; keep it, it is shown only now.', '']
  if (made.adminToken !== undefined) {
    lines.push(
      `Admin token, for /admin/v0 and \`npm run cli\` (export ADMIN_TOKEN=...); kept in ${made.adminToken.file}:`,
      '',
      `    ${made.adminToken.token}`,
      '',
    )
  }
  if (made.serviceUrl !== undefined) {
    lines.push('`npm run cli` in another terminal reaches this service with:', '', `    export KEYGATE_URL=${made.serviceUrl}`, '')
  }
  if (made.signIn !== undefined) {
    const until = made.signIn.expiresAt.toISOString().slice(0, 16).replace('T', ' ')
    lines.push(
      `Dashboard: sign in as ${made.signIn.email}, owner of "${made.signIn.businessName}", with this one-time link (until ${until} UTC):`,
      '',
      `    ${made.signIn.url}`,
      '',
    )
  }
  return lines.join('\n') + '\n'
}
