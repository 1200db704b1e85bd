import { listAnswer, PAGE_USAGE, pageOf, pageOptions, text, type Command } from './command.ts'
import { flowDetails, flowTable, runTable } from './output.ts'

export const flowsCreate: Command = {
  name: 'flows create',
  usage: '--business ID --name NAME',
  summary: 'Define a flow that keys with FLOW_TRIGGER can trigger.',
  options: { business: { type: 'string' }, name: { type: 'string' } },
  required: ['business', 'name'],
  async run({ options, api }) {
    const flow = await api.createFlow(text(options, 'business')!, text(options, 'name')!)
    return { json: flow, text: `Created flow "${flow.name}".\n${flowDetails(flow)}` }
  },
}

export const flowsList: Command = {
  name: 'flows list',
  usage: `--business ID ${PAGE_USAGE}`,
  summary: "List a business's flows, newest first.",
  options: { business: { type: 'string' }, ...pageOptions },
  required: ['business'],
  async run({ options, api }) {
    const business = text(options, 'business')!
    const page = await api.listFlows(business, pageOf(options))
    return listAnswer(page, flowTable, `flows list --business ${business}`, options)
  },
}

export const flowsRuns: Command = {
  name: 'flows runs',
  usage: `FLOW_ID ${PAGE_USAGE}`,
  summary: "List a flow's runs, newest first (--json adds each run's input).",
  target: 'FLOW_ID',
  options: pageOptions,
  required: [],
  async run({ options, target, api }) {
    const page = await api.listRuns(target!, pageOf(options))
    return listAnswer(page, runTable, `flows runs ${target}`, options)
  },
}
