import type { UsagePoint } from '../usage/report.ts'
import { html, type Html } from './html.ts'

/**
 * A bar chart of accepted and refused requests, drawn on the server as SVG: no script, no
 * library, nothing fetched. Colours are presentation attributes, not `style` (the pages'
 * CSP allows no inline styles). Each bar carries a <title>, which browsers show on hover;
 * the same numbers are in a table below the chart for screen readers and for copying.
 */

const WIDTH = 760
const HEIGHT = 220
const PAD = { top: 12, right: 12, bottom: 28, left: 44 }
export const ACCEPTED_COLOUR = '#2f6fdb'
export const REFUSED_COLOUR = '#c8372d'

export interface ChartPoint {
  at: Date
  label: string
  accepted: number
  refused: number
}

export function refusedTotal(point: UsagePoint): number {
  return Object.values(point.refused).reduce((sum, n) => sum + n, 0)
}

/** A round number at or above `max` for the top of the axis: 1, 2, 5, 10, 20, 50... */
export function axisTop(max: number): number {
  if (max <= 0) return 1
  const magnitude = 10 ** Math.floor(Math.log10(max))
  for (const step of [1, 2, 5, 10]) if (step * magnitude >= max) return step * magnitude
  return 10 * magnitude
}

export function usageChart(points: ChartPoint[], caption: string, labelEvery: number): Html {
  const plotWidth = WIDTH - PAD.left - PAD.right
  const plotHeight = HEIGHT - PAD.top - PAD.bottom
  const top = axisTop(Math.max(0, ...points.map((p) => p.accepted + p.refused)))
  const slot = plotWidth / Math.max(points.length, 1)
  const barWidth = Math.max(2, slot * 0.7)
  const y = (n: number) => PAD.top + plotHeight - (n / top) * plotHeight
  const fixed = (n: number) => Number(n.toFixed(1))
  const grid = [0, top / 2, top].filter(Number.isInteger).map(
    (v) => html`<line x1="${PAD.left}" x2="${WIDTH - PAD.right}" y1="${fixed(y(v))}" y2="${fixed(y(v))}" stroke="#d9dee5" stroke-width="1"/>
<text x="${PAD.left - 6}" y="${fixed(y(v)) + 4}" text-anchor="end" font-size="11" fill="#5b6574">${formatCount(v)}</text>`,
  )
  const bars = points.map((p, i) => {
    const x = fixed(PAD.left + i * slot + (slot - barWidth) / 2)
    const acceptedTop = y(p.accepted)
    const refusedTop = y(p.accepted + p.refused)
    return html`<g class="bar"><title>${p.label}: ${p.accepted} accepted, ${p.refused} refused</title>
<rect x="${x}" y="${fixed(PAD.top)}" width="${fixed(barWidth)}" height="${fixed(plotHeight)}" fill="transparent"/>
${p.accepted > 0 ? html`<rect x="${x}" y="${fixed(acceptedTop)}" width="${fixed(barWidth)}" height="${fixed(y(0) - acceptedTop)}" fill="${ACCEPTED_COLOUR}"/>` : null}
${p.refused > 0 ? html`<rect x="${x}" y="${fixed(refusedTop)}" width="${fixed(barWidth)}" height="${fixed(acceptedTop - refusedTop)}" fill="${REFUSED_COLOUR}"/>` : null}
${i % labelEvery === 0 ? html`<text x="${fixed(x + barWidth / 2)}" y="${HEIGHT - 8}" text-anchor="middle" font-size="11" fill="#5b6574">${p.label}</text>` : null}</g>`
  })
  return html`<svg class="chart" viewBox="0 0 ${WIDTH} ${HEIGHT}" width="100%" role="img" aria-label="${caption}" xmlns="http://www.w3.org/2000/svg">
${grid}
${bars}
</svg>`
}

function formatCount(n: number): string {
  if (n >= 1_000_000) return `${n / 1_000_000}M`
  if (n >= 1000) return `${n / 1000}k`
  return String(n)
}
