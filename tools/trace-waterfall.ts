/**
 * Draws one trace as a waterfall, the picture of docs/operations.md#traces.
 *
 *   npm run build && node dist/tools/trace-waterfall.js <spans.json> <out.png> [--html <out.html>]
 *
 * The spans come from a test run, not from a drawing program: test/docs/trace-waterfall.int-spec.ts
 * writes them when TRACE_WATERFALL_OUT names a file. This page is self-contained (no fonts, scripts
 * or images from elsewhere) and headless Chromium renders it to PNG through playwright-core.
 *
 *   TRACE_WATERFALL_OUT=/tmp/spans.json npx jest test/docs/trace-waterfall.int-spec.ts
 *   node dist/tools/trace-waterfall.js /tmp/spans.json docs/images/trace-paid-order.png
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

/** One span as the picture needs it: times in epoch milliseconds, a few attributes to label it with. */
export interface WaterfallSpan {
  name: string;
  /** The service that recorded it (`payment-webhooks`, `carrier`). */
  service: string;
  kind: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  /** The span ids it links to. */
  links: string[];
  startMs: number;
  endMs: number;
  attributes: Record<string, string | number>;
}

export interface WaterfallInput {
  title?: string;
  spans: WaterfallSpan[];
}

/** A span placed in the picture: its row and how deep under its parents it sits. */
interface Row {
  span: WaterfallSpan;
  depth: number;
}

/** Parents before children, siblings in the order they started; a span whose parent is not in the file is a root. */
export function rowsOf(spans: readonly WaterfallSpan[]): Row[] {
  const ids = new Set(spans.map((s) => s.spanId));
  const children = new Map<string | null, WaterfallSpan[]>();
  for (const span of spans) {
    const parent = span.parentSpanId && ids.has(span.parentSpanId) ? span.parentSpanId : null;
    children.set(parent, [...(children.get(parent) ?? []), span]);
  }
  const rows: Row[] = [];
  const visit = (parent: string | null, depth: number) => {
    for (const span of [...(children.get(parent) ?? [])].sort((a, b) => a.startMs - b.startMs)) {
      rows.push({ span, depth });
      visit(span.spanId, depth + 1);
    }
  };
  visit(null, 0);
  return rows;
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function duration(ms: number): string {
  return ms >= 1_000 ? `${(ms / 1_000).toFixed(2)} s` : ms >= 10 ? `${ms.toFixed(0)} ms` : `${ms.toFixed(1)} ms`;
}

/** A tick step that gives five to ten ticks over `totalMs`. */
function tickStep(totalMs: number): number {
  for (const step of [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1_000, 2_000, 5_000, 10_000]) {
    if (totalMs / step <= 10) return step;
  }
  return Math.ceil(totalMs / 10_000) * 1_000;
}

const COLOURS: Record<string, string> = { 'payment-webhooks': '#3b6fb6', carrier: '#c0703a' };

/** The waterfall of `input` as a self-contained HTML page. */
export function waterfallHtml(input: WaterfallInput): string {
  const rows = rowsOf(input.spans);
  if (rows.length === 0) throw new Error('no spans to draw');
  const t0 = Math.min(...input.spans.map((s) => s.startMs));
  const total = Math.max(...input.spans.map((s) => s.endMs)) - t0 || 1;
  // The lane's last 6% stays free for the last tick's label and a label after the last bar.
  const pct = (ms: number) => ((ms / total) * 94).toFixed(3);
  const nameOf = new Map(input.spans.map((s) => [s.spanId, s.name]));
  const rowOf = new Map(rows.map((r, i) => [r.span.spanId, i]));
  const step = tickStep(total);

  const ticks: string[] = [];
  for (let ms = 0; ms <= total; ms += step) {
    ticks.push(`<div class="tick" style="left:${pct(ms)}%"><span>${duration(ms).replace('.0 ms', ' ms')}</span></div>`);
  }

  const lines = rows.map(({ span, depth }, i) => {
    const start = span.startMs - t0;
    const length = span.endMs - span.startMs;
    const colour = COLOURS[span.service] ?? '#6b6b6b';
    const facts = Object.entries(span.attributes)
      .map(([k, v]) => `<span class="attr">${escape(k)}=<b>${escape(String(v))}</b></span>`)
      .join(' ');
    const links = span.links
      .map((id) => {
        const at = rowOf.get(id);
        return `<span class="link">links → ${escape(nameOf.get(id) ?? id)}${at === undefined ? '' : ` (row ${at + 1})`}</span>`;
      })
      .join(' ');
    // A bar too narrow for its label has the label after it.
    const inside = length / total > 0.18;
    return `
      <div class="row">
        <div class="label" style="padding-left:${12 + depth * 22}px">
          <div class="name">${depth > 0 ? '<span class="elbow">└</span>' : ''}<span class="n">${i + 1}</span> ${escape(span.name)}</div>
          <div class="meta"><span class="svc" style="color:${colour}">${escape(span.service)}</span> · ${escape(span.kind)} ${links}</div>
          <div class="meta">${facts}</div>
        </div>
        <div class="lane">
          ${ticks.map((t) => t.replace(/<span>.*<\/span>/, '')).join('')}
          <div class="bar" style="left:${pct(start)}%;width:max(${pct(length)}%,3px);background:${colour}">
            ${inside ? `<span class="in">${duration(length)}</span>` : ''}
          </div>
          ${inside ? '' : `<span class="out" style="left:calc(${pct(start + length)}% + 6px)">${duration(length)}</span>`}
        </div>
      </div>`;
  });

  const traceId = rows[0].span.traceId;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>${escape(input.title ?? 'trace')}</title>
<style>
  * { box-sizing: border-box; }
  body { margin: 0; background: #fff; color: #1d1d1f; font: 13px/1.35 "DejaVu Sans", "Liberation Sans", Arial, sans-serif; }
  #waterfall { width: 1280px; padding: 18px 20px 14px; }
  h1 { font-size: 17px; margin: 0 0 2px; }
  .sub { color: #555; margin-bottom: 12px; font-family: "DejaVu Sans Mono", monospace; font-size: 12px; }
  .axis, .row { display: grid; grid-template-columns: 560px 1fr; }
  .axis .lane { height: 22px; border-bottom: 1px solid #bbb; }
  .axis .tick span { position: absolute; top: 2px; left: 3px; color: #555; font-size: 11px; white-space: nowrap; }
  .row { border-bottom: 1px solid #eee; }
  .row:nth-child(even) { background: #fafbfc; }
  .label { padding: 6px 8px 6px 12px; border-right: 1px solid #ddd; }
  .name { font-weight: 600; font-family: "DejaVu Sans Mono", monospace; font-size: 13px; }
  .n { display: inline-block; min-width: 18px; color: #888; font-weight: 400; }
  .elbow { color: #999; margin-right: 4px; }
  .meta { color: #555; font-size: 11px; margin-top: 2px; }
  .attr { font-family: "DejaVu Sans Mono", monospace; margin-right: 8px; white-space: nowrap; }
  .attr b { color: #1d1d1f; font-weight: 600; }
  .link { color: #8a3ea8; font-weight: 600; margin-left: 6px; }
  .lane { position: relative; }
  .tick { position: absolute; top: 0; bottom: 0; border-left: 1px dashed #e1e1e1; }
  .bar { position: absolute; top: 50%; height: 20px; margin-top: -10px; border-radius: 3px; }
  .bar .in { position: absolute; left: 6px; top: 2px; color: #fff; font-size: 12px; font-weight: 600; white-space: nowrap; }
  .out { position: absolute; top: 50%; margin-top: -8px; font-size: 12px; font-weight: 600; color: #333; white-space: nowrap; }
  .legend { margin-top: 10px; color: #555; font-size: 11px; }
  .legend i { display: inline-block; width: 10px; height: 10px; border-radius: 2px; margin: 0 4px 0 12px; vertical-align: -1px; }
</style></head>
<body><div id="waterfall">
  <h1>${escape(input.title ?? 'A trace')}</h1>
  <div class="sub">trace ${escape(traceId)} · ${rows.length} spans · ${duration(total)}</div>
  <div class="axis"><div></div><div class="lane">${ticks.join('')}</div></div>
  ${lines.join('')}
  <div class="legend">services:${Object.entries(COLOURS)
    .map(([svc, c]) => `<i style="background:${c}"></i>${escape(svc)}`)
    .join('')} &nbsp;·&nbsp; indented: child of the span above · links →: a span link (the messaging conventions' link to the span that produced the message)</div>
</div></body></html>
`;
}

/** Chromium's flags for a render with no network and no first-run work. */
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** Renders the page's waterfall to a PNG with headless Chromium. */
export async function renderPng(html: string, out: string, executablePath = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'): Promise<void> {
  // Loaded here: playwright-core is a devDependency, needed only to draw.
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath, args: CHROMIUM_ARGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1320, height: 600 }, deviceScaleFactor: 1.5 });
    await page.setContent(html, { waitUntil: 'load' });
    await page.locator('#waterfall').screenshot({ path: out });
  } finally {
    await browser.close();
  }
}

async function main(): Promise<void> {
  const { positionals, values } = parseArgs({ allowPositionals: true, options: { html: { type: 'string' } } });
  const [spansFile, out] = positionals;
  if (!spansFile || !out) {
    process.stderr.write('usage: trace-waterfall <spans.json> <out.png> [--html <out.html>]\n');
    process.exit(2);
  }
  const parsed = JSON.parse(readFileSync(spansFile, 'utf8')) as WaterfallInput | WaterfallSpan[];
  const input = Array.isArray(parsed) ? { spans: parsed } : parsed;
  const html = waterfallHtml(input);
  if (values.html) writeFileSync(values.html, html);
  await renderPng(html, out);
  process.stdout.write(`${out}: ${input.spans.length} spans\n`);
}

if (require.main === module) {
  main().catch((err: Error) => {
    process.stderr.write(`trace-waterfall: ${err.message}\n`);
    process.exit(1);
  });
}
