import { PUBLIC_KEY_SCOPES, SCOPES } from '../access/scopes.ts'
import {
  businessesAudit,
  businessesCreate,
  businessesErase,
  businessesErasure,
  businessesIdentitySecret,
  businessesList,
  businessesShow,
  businessesUpdate,
} from './business-commands.ts'
import type { Command, OptionSpec } from './command.ts'
import { flowsCreate, flowsList, flowsRuns } from './flow-commands.ts'
import { keysAudit, keysCreate, keysList, keysRevoke, keysRoll, keysShow, keysUpdate, keysUsage } from './key-commands.ts'
import { membersCreate, membersLink, membersList, membersRemove } from './member-commands.ts'
import {
  webhooksCreate,
  webhooksDelete,
  webhooksDeliveries,
  webhooksList,
  webhooksResend,
  webhooksTest,
  webhooksUpdate,
} from './webhook-commands.ts'
import { CLI } from './output.ts'

/** Every command, in the order the help lists them. */
export const commands: Command[] = [
  businessesCreate,
  businessesList,
  businessesShow,
  businessesUpdate,
  keysCreate,
  keysList,
  keysShow,
  keysUpdate,
  keysRevoke,
  keysRoll,
  keysUsage,
  keysAudit,
  businessesAudit,
  businessesIdentitySecret,
  businessesErase,
  businessesErasure,
  flowsCreate,
  flowsList,
  flowsRuns,
  webhooksCreate,
  webhooksList,
  webhooksUpdate,
  webhooksDelete,
  webhooksTest,
  webhooksDeliveries,
  webhooksResend,
  membersCreate,
  membersList,
  membersLink,
  membersRemove,
]

export const globalOptions = {
  url: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} satisfies Record<string, OptionSpec>

export function commandHelp(command: Command): string {
  return `Usage: ${CLI} ${command.name}${command.usage ? ' ' + command.usage : ''} [--json]\n  ${command.summary}`
}

export function helpText(): string {
  const usage = commands.map((c) => `  ${c.name}${c.usage ? ' ' + c.usage : ''}\n      ${c.summary}`)
  return `keygate operator CLI: businesses, keys, flows and dashboard members, through /admin/v0.

Usage: ${CLI} <command> [options]

Commands:
${usage.join('\n')}
  help
      Show this help.

Options for every command:
  --url URL     the service's base URL (env KEYGATE_URL; default http://localhost:3000)
  --token TOKEN the operator token the service runs with (env ADMIN_TOKEN; prefer the
                variable: arguments are visible to other users in the process list)
  --json        print the server's JSON answer instead of text (lists: {"data", "nextCursor"});
                to pipe it, run npm -s (npm run -s cli -- ...) so npm prints no banner
  -h, --help    show this help

Scopes: repeat --scope or separate them with commas. The 13 scopes:
${wrap(SCOPES.join(', '), '  ')}
A public key may hold only
${wrap(PUBLIC_KEY_SCOPES.join(', '), '  ')}
and needs at least one --origin: *, example.com (and its subdomains), app.example.com,
https://app.example.com:8443 or localhost:3000. A private key takes no --origin;
it may be limited to client addresses with --allow-ip (repeat it): 203.0.113.7,
198.51.100.0/24 or 2001:db8::/48. Without any, it works from any address.
--created-by defaults to the operating-system user.

Members: --role defaults to member. A password is never an argument: --password-stdin
reads it from standard input (one trailing newline is dropped), e.g.
  ${CLI} members create --business ID --email ada@example.com --password-stdin < pw.txt
Without it the answer carries a one-time sign-in link on which the member chooses a
password. A link is shown once, works once and expires at the time printed with it;
members link issues another (using one ends the member's other dashboard sessions).

Lists: a page of at most --limit records (1-1000, default 100); when there are more,
the text ends with the command for the next page, and --json carries its "nextCursor",
which --cursor takes back.

Exit status: 0 done, 1 the server refused (its error code and message are printed) or
could not be reached, 2 a usage error.`
}

function wrap(words: string, indent: string, width = 88): string {
  const lines: string[] = []
  let line = indent
  for (const word of words.split(' ')) {
    if (line.length + word.length > width && line.trim() !== '') {
      lines.push(line.trimEnd())
      line = indent
    }
    line += word + ' '
  }
  lines.push(line.trimEnd())
  return lines.join('\n')
}
