import { listAnswer, PAGE_USAGE, pageOf, pageOptions, text, UsageError, type Command } from './command.ts'
import { memberDetails, memberTable, signInLinkLines } from './output.ts'

export const membersCreate: Command = {
  name: 'members create',
  usage: '--business ID --email EMAIL [--role owner|member] [--password-stdin]',
  summary:
    'Add a dashboard member; without a password, print a one-time sign-in link, on which they choose a password and join (pending until then). An email that already has an account (a member of another business) takes no --password.',
  // `password` exists only to refuse it with advice instead of "Unknown option".
  options: {
    business: { type: 'string' },
    email: { type: 'string' },
    role: { type: 'string' },
    'password-stdin': { type: 'boolean' },
    password: { type: 'string' },
  },
  required: ['business', 'email'],
  async run({ options, api, readStdin }) {
    if (options.password !== undefined) {
      throw new UsageError(
        'members create takes no --password: arguments are visible to other users in the process list. ' +
          'Pipe it in with --password-stdin, or leave it out to get a one-time sign-in link.',
      )
    }
    const role = text(options, 'role') ?? 'member'
    if (role !== 'owner' && role !== 'member') {
      throw new UsageError(`--role must be "owner" or "member", not "${role}".`)
    }
    let password: string | undefined
    if (options['password-stdin'] === true) {
      password = withoutLineEnd(await readStdin())
      if (password === '') throw new UsageError('--password-stdin read no password from standard input.')
    }
    const created = await api.createMember(text(options, 'business')!, {
      email: text(options, 'email')!,
      role,
      ...(password === undefined ? {} : { password }),
    })
    const { signInLink, ...member } = created
    return {
      json: created,
      text: [
        `Created ${member.role} ${member.email}.`,
        memberDetails(member),
        '',
        signInLink ? signInLinkLines(signInLink) : 'They sign in with their email and the password given.',
      ].join('\n'),
    }
  },
}

export const membersList: Command = {
  name: 'members list',
  usage: `--business ID ${PAGE_USAGE}`,
  summary: "List a business's dashboard members, oldest first.",
  options: { business: { type: 'string' }, ...pageOptions },
  required: ['business'],
  async run({ options, api }) {
    const business = text(options, 'business')!
    const page = await api.listMembers(business, pageOf(options))
    return listAnswer(page, memberTable, `members list --business ${business}`, options)
  },
}

export const membersLink: Command = {
  name: 'members link',
  usage: 'MEMBER_ID',
  summary:
    'Print a new one-time sign-in link, e.g. for a forgotten password: on it they choose a new one; every other session and link of their account ends.',
  target: 'MEMBER_ID',
  options: {},
  required: [],
  async run({ target, api }) {
    const { signInLink } = await api.issueSignInLink(target!)
    return { json: { signInLink }, text: `New sign-in link for member ${target}.\n${signInLinkLines(signInLink)}` }
  },
}

export const membersRemove: Command = {
  name: 'members remove',
  usage: 'MEMBER_ID',
  summary: 'Remove a dashboard member; their sessions and sign-in links end at once.',
  target: 'MEMBER_ID',
  options: {},
  required: [],
  async run({ target, api }) {
    await api.removeMember(target!)
    return { json: { id: target, removed: true }, text: `Removed member ${target}; their sessions and sign-in links ended.` }
  },
}

/** `echo secret |` and files end with a newline that is not part of the password. */
function withoutLineEnd(input: string): string {
  return input.replace(/\r?\n$/, '')
}
