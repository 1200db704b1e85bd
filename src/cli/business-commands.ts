import { listAnswer, PAGE_USAGE, pageOf, pageOptions, text, type Command } from './command.ts'
import { auditTable, businessDetails, businessTable, recordLines } from './output.ts'

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
