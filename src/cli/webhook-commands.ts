import { text, UsageError, type Command } from './command.ts'
import { deliveryTable, endpointDetails, endpointTable } from './output.ts'

/** `--events a,b` as a list. */
function eventsOf(value: string | undefined): string[] | undefined {
  return value
    ?.split(',')
    .map((event) => event.trim())
    .filter((event) => event !== '')
}

function enabledOf(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined
  if (value === 'true' || value === 'false') return value === 'true'
  throw new UsageError('--enabled takes true or false.')
}

export const webhooksCreate: Command = {
  name: 'webhooks create',
  usage: '--business ID --receiver URL --events key.created,key.revoked,... [--description TEXT]',
  summary: "Add a webhook endpoint (--receiver: its URL; --url stays the service's); its signing secret is printed this once.",
  options: { business: { type: 'string' }, receiver: { type: 'string' }, events: { type: 'string' }, description: { type: 'string' } },
  required: ['business', 'receiver', 'events'],
  async run({ options, api }) {
    const description = text(options, 'description')
    const created = await api.createEndpoint(text(options, 'business')!, {
      url: text(options, 'receiver')!,
      events: eventsOf(text(options, 'events'))!,
      ...(description === undefined ? {} : { description }),
    })
    return {
      json: created,
      text: `Added webhook endpoint.\n${endpointDetails(created)}\n\nSigning secret (shown this once; verify deliveries with it):\n${created.secret}`,
    }
  },
}

export const webhooksList: Command = {
  name: 'webhooks list',
  usage: '--business ID',
  summary: "List a business's webhook endpoints.",
  options: { business: { type: 'string' } },
  required: ['business'],
  async run({ options, api }) {
    const { data } = await api.listEndpoints(text(options, 'business')!)
    return { json: data, text: endpointTable(data) }
  },
}

export const webhooksUpdate: Command = {
  name: 'webhooks update',
  usage: 'ENDPOINT_ID --business ID [--receiver URL] [--events LIST] [--description TEXT] [--enabled true|false]',
  summary: 'Change a webhook endpoint; --enabled true sends again after a disabling.',
  target: 'ENDPOINT_ID',
  options: {
    business: { type: 'string' },
    receiver: { type: 'string' },
    events: { type: 'string' },
    description: { type: 'string' },
    enabled: { type: 'string' },
  },
  required: ['business'],
  async run({ options, target, api }) {
    const changes = {
      url: text(options, 'receiver'),
      events: eventsOf(text(options, 'events')),
      description: text(options, 'description'),
      enabled: enabledOf(text(options, 'enabled')),
    }
    if (Object.values(changes).every((value) => value === undefined)) {
      throw new UsageError('webhooks update needs one of --receiver, --events, --description, --enabled.')
    }
    const endpoint = await api.updateEndpoint(text(options, 'business')!, target!, changes)
    return { json: endpoint, text: `Changed webhook endpoint.\n${endpointDetails(endpoint)}` }
  },
}

export const webhooksDelete: Command = {
  name: 'webhooks delete',
  usage: 'ENDPOINT_ID --business ID',
  summary: 'Remove a webhook endpoint and its deliveries.',
  target: 'ENDPOINT_ID',
  options: { business: { type: 'string' } },
  required: ['business'],
  async run({ options, target, api }) {
    await api.deleteEndpoint(text(options, 'business')!, target!)
    return { json: { deleted: target }, text: `Removed webhook endpoint ${target}.` }
  },
}

export const webhooksTest: Command = {
  name: 'webhooks test',
  usage: 'ENDPOINT_ID --business ID',
  summary: 'Send a webhook.test event to an endpoint.',
  target: 'ENDPOINT_ID',
  options: { business: { type: 'string' } },
  required: ['business'],
  async run({ options, target, api }) {
    const sent = await api.testEndpoint(text(options, 'business')!, target!)
    return {
      json: sent,
      text: `Sent webhook.test (webhook-id ${sent.eventId}); see it with webhooks deliveries ${target} --business ${text(options, 'business')}.`,
    }
  },
}

export const webhooksDeliveries: Command = {
  name: 'webhooks deliveries',
  usage: 'ENDPOINT_ID --business ID',
  summary: "An endpoint's latest 50 deliveries: event, status, attempts, the receiver's answer.",
  target: 'ENDPOINT_ID',
  options: { business: { type: 'string' } },
  required: ['business'],
  async run({ options, target, api }) {
    const { data } = await api.listDeliveries(text(options, 'business')!, target!)
    return { json: data, text: deliveryTable(data) }
  },
}

export const webhooksResend: Command = {
  name: 'webhooks resend',
  usage: 'DELIVERY_ID --business ID --endpoint ENDPOINT_ID',
  summary: 'Send a delivery again now, with the same webhook-id.',
  target: 'DELIVERY_ID',
  options: { business: { type: 'string' }, endpoint: { type: 'string' } },
  required: ['business', 'endpoint'],
  async run({ options, target, api }) {
    const resent = await api.resendDelivery(text(options, 'business')!, text(options, 'endpoint')!, target!)
    return { json: resent, text: `Delivery ${target} will be sent again within a second.` }
  },
}
