import { listAnswer, PAGE_USAGE, pageOf, pageOptions, text, UsageError, type Command } from './command.ts'
import { auditTable, businessDetails, businessTable, CLI, erasureDetails, recordLines } from './output.ts'

export const businessesCreate: Command = {
  name: 'businesses create',
  usage: '--name NAME',
  summary: 'Create a business.',
  options: { name: { type: 'string' } },
  required: ['name'],
  async run({ options, api }) {
    const business = await api.createBusiness(text(options, 'name')!)
    return { json: business, text: `Created business "${business.name}".\n${businessDetails(business)}` }
  },
}

export const businessesList: Command = {
  name: 'businesses list',
  usage: PAGE_USAGE,
  summary: 'List the businesses, newest first.',
  options: pageOptions,
  required: [],
  async run({ options, api }) {
    const page = await api.listBusinesses(pageOf(options))
    return listAnswer(page, businessTable, 'businesses list', options)
  },
}

export const businessesAudit: Command = {
  name: 'businesses audit',
  usage: `--business ID ${PAGE_USAGE}`,
  summary: "A business's audit trail (keys and members), newest first.",
  options: { business: { type: 'string' }, ...pageOptions },
  required: ['business'],
  async run({ options, api }) {
    const business = text(options, 'business')!
    const page = await api.businessAudit(business, pageOf(options))
    return listAnswer(page, auditTable, `businesses audit --business ${business}`, options)
  },
}

export const businessesIdentitySecret: Command = {
  name: 'businesses identity-secret',
  usage: '--business ID',
  summary: "Set (or replace) a business's identity secret for verified public-key people writes; printed this once.",
  options: { business: { type: 'string' } },
  required: ['business'],
  async run({ options, api }) {
    const { secret } = await api.setIdentitySecret(text(options, 'business')!)
    return {
      json: { secret },
      text: [
        recordLines([['SECRET', secret]]),
        '',
        "Keep it on your servers only: they sign each person's externalId (or lower-cased email) with it",
        '(HMAC-SHA256, hex) and pages send that as identityHash. Any earlier secret no longer verifies.',
      ].join('\n'),
    }
  },
}

export const businessesShow: Command = {
  name: 'businesses show',
  usage: '--business ID',
  summary: 'Show a business, with how long its events are kept.',
  options: { business: { type: 'string' } },
  required: ['business'],
  async run({ options, api }) {
    const business = await api.getBusiness(text(options, 'business')!)
    return { json: business, text: businessDetails(business) }
  },
}

export const businessesUpdate: Command = {
  name: 'businesses update',
  usage: '--business ID [--name NAME] [--event-retention-days DAYS|default]',
  summary: "Rename a business, or set how many days its events are kept (default: the operator's EVENT_RETENTION_DAYS).",
  options: { business: { type: 'string' }, name: { type: 'string' }, 'event-retention-days': { type: 'string' } },
  required: ['business'],
  async run({ options, api }) {
    const name = text(options, 'name')
    const days = text(options, 'event-retention-days')
    if (name === undefined && days === undefined) throw new UsageError('give --name or --event-retention-days (or both)')
    // Passed on as a number when it reads as one: the server says what is wrong with it.
    const eventRetentionDays =
      days === undefined ? undefined : days === 'default' ? null : /^-?\d+(\.\d+)?$/.test(days) ? Number(days) : days
    const business = await api.updateBusiness(text(options, 'business')!, {
      ...(name === undefined ? {} : { name }),
      ...(eventRetentionDays === undefined ? {} : { eventRetentionDays: eventRetentionDays as number | null }),
    })
    return { json: business, text: `Updated business "${business.name}".\n${businessDetails(business)}` }
  },
}

export const businessesErase: Command = {
  name: 'businesses erase',
  usage: '--business ID [--person-id ID] [--anonymous-id ID] [--wait]',
  summary: "Erase a person's events (either id matches); reads hide them at once. --wait: until storage has lost them.",
  options: {
    business: { type: 'string' },
    'person-id': { type: 'string' },
    'anonymous-id': { type: 'string' },
    wait: { type: 'boolean' },
  },
  required: ['business'],
  async run({ options, api }) {
    const business = text(options, 'business')!
    const personId = text(options, 'person-id')
    const anonymousId = text(options, 'anonymous-id')
    if (personId === undefined && anonymousId === undefined) throw new UsageError('give --person-id or --anonymous-id (or both)')
    const created = await api.eraseEvents(business, {
      ...(personId === undefined ? {} : { personId }),
      ...(anonymousId === undefined ? {} : { anonymousId }),
    })
    let erasure = await api.getErasure(business, created.id)
    while (options.wait === true && erasure.status === 'pending') {
      await Bun.sleep(500)
      erasure = await api.getErasure(business, created.id)
    }
    const next = erasure.status === 'pending' ? `\n\nFollow it: ${CLI} businesses erasure --business ${business} ${erasure.id}` : ''
    return { json: erasure, text: `${erasureDetails(erasure)}${next}` }
  },
}

export const businessesErasure: Command = {
  name: 'businesses erasure',
  usage: '--business ID ERASURE_ID',
  summary: 'Show an erasure request: pending or done, and the events deleted.',
  target: 'ERASURE_ID',
  options: { business: { type: 'string' } },
  required: ['business'],
  async run({ options, target, api }) {
    const erasure = await api.getErasure(text(options, 'business')!, target!)
    return { json: erasure, text: erasureDetails(erasure) }
  },
}
