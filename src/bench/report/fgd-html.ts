/**
 * The HTML report of `sits bench fgd`: one self-contained file (Chart.js inlined) with the summary table,
 * GPU allocation against arrived workload (the paper's Fig. 9), unallocated GPU at 100 % arrived as bars
 * (with the published medians when the trace is one of the paper's), and the fragmentation rate.
 */
import { PUBLISHED_UNALLOCATED_100, publishedName } from '../fgd/published.ts';
import { FRAG_RATE_AT, UNALLOCATED_AT, type FgdBenchJson, type FgdCurves } from '../fgd/summary.ts';
import { chartJsSource, escapeHtml, scriptJson } from './chartjs.ts';

const COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1', '#ff9da7', '#9c755f', '#bab0ac'];

const fmt = (v: number | null | undefined, digits = 2): string => (v === null || v === undefined ? '–' : v.toFixed(digits));

export function fgdReportHtml(json: FgdBenchJson, curves: readonly FgdCurves[]): string {
  const published = PUBLISHED_UNALLOCATED_100[json.trace];
  const bound = json.lowerBound === undefined ? undefined : json.lowerBound.unallocatedPct['100'];
  // The bound is the same for every policy (it depends on the arrivals only): shown on every row with the policy's distance to it.
  const boundHead = bound === undefined ? [] : ['lower bound @100', 'above bound @100'];
  const head = ['policy', ...UNALLOCATED_AT.map((b) => `unalloc @${b}`), ...boundHead, ...(published ? ['published @100'] : []), ...FRAG_RATE_AT.map((b) => `frag rate @${b}`), 'run ms'];
  const rows = json.results.map((r) => {
    const pub = published?.[publishedName(r.policy)];
    const u = r.unallocatedPct['100'];
    const boundCells = bound === undefined ? [] : [fmt(bound), bound === null || u === null || u === undefined ? '–' : fmt(u - bound)];
    return [escapeHtml(r.policy), ...UNALLOCATED_AT.map((b) => fmt(r.unallocatedPct[String(b)])), ...boundCells, ...(published ? [fmt(pub)] : []), ...FRAG_RATE_AT.map((b) => fmt(r.fragRatePct[String(b)], 1)), fmt(r.runMs, 0)];
  });
  const table = `<table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c, i) => (i === 0 ? `<th>${c}</th>` : `<td>${c}</td>`)).join('')}</tr>`).join('')}</tbody></table>`;
  const data = {
    policies: curves.map((c, i) => ({ name: c.policy, color: COLORS[i % COLORS.length], alloc: c.allocPct, fragRate: c.fragRatePct, frag: c.fragPct, unalloc100: json.results[i]?.unallocatedPct['100'] ?? null, perSeed: c.unallocated100, published: published?.[publishedName(c.policy)] ?? null })),
    seeds: json.seeds,
  };
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>SITS · FGD benchmark · ${escapeHtml(json.trace)}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:12px 0}th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}thead th{background:#f4f4f4}tbody th{text-align:left}
.charts{display:grid;grid-template-columns:1fr 1fr;gap:24px}.chart{position:relative;height:360px}
p.note{color:#555}
</style></head><body>
<h1>FGD experiment · ${escapeHtml(json.trace)}</h1>
<p class="note">Arrivals only, tune 1.3, failed pods dropped; seeds ${escapeHtml(json.seeds.join(', '))}; values are medians over seeds (fgd-reproduction.md §6). Unallocated GPU % = 100 − GPU allocation % at the given arrived workload %.</p>
${table}
<div class="charts">
<div><h2>GPU allocation vs arrived workload (Fig. 9)</h2><div class="chart"><canvas id="alloc"></canvas></div></div>
<div><h2>Unallocated GPU at 100 % arrived</h2><div class="chart"><canvas id="bars"></canvas></div></div>
<div><h2>Unallocated GPU vs arrived workload (80–130 %)</h2><div class="chart"><canvas id="unalloc"></canvas></div></div>
<div><h2>Fragmentation rate vs arrived workload</h2><div class="chart"><canvas id="frag"></canvas></div></div>
</div>
<script>${chartJsSource()}</script>
<script>
const DATA = ${scriptJson(data)};
const xs = (n, from) => Array.from({ length: n - from }, (_, i) => i + from);
const longest = Math.max(...DATA.policies.map((p) => p.alloc.length));
function line(id, pick, from, yTitle, extra) {
  const labels = xs(longest, from);
  const datasets = DATA.policies.map((p) => ({ label: p.name, data: labels.map((x) => { const v = pick(p)[x]; return v === null || v === undefined ? null : v; }), borderColor: p.color, backgroundColor: p.color, pointRadius: 0, borderWidth: 2, spanGaps: true }));
  if (extra) datasets.push(extra(labels));
  new Chart(document.getElementById(id), { type: 'line', data: { labels, datasets }, options: { animation: false, maintainAspectRatio: false, interaction: { mode: 'index', intersect: false }, scales: { x: { title: { display: true, text: 'arrived workload (% of GPU capacity)' } }, y: { title: { display: true, text: yTitle } } } } });
}
line('alloc', (p) => p.alloc, 0, 'GPU allocation %', (labels) => ({ label: 'ideal', data: labels.map((x) => Math.min(x, 100)), borderColor: '#999', borderDash: [4, 4], pointRadius: 0, borderWidth: 1 }));
line('unalloc', (p) => p.alloc.map((v) => (v === null ? null : Math.round((100 - v) * 100) / 100)), 80, 'unallocated GPU %');
line('frag', (p) => p.fragRate, 0, 'fragmentation rate % (frag / idle GPU)');
const bars = [{ label: 'ours (median)', data: DATA.policies.map((p) => p.unalloc100), backgroundColor: DATA.policies.map((p) => p.color) }];
if (DATA.policies.some((p) => p.published !== null)) bars.push({ label: 'published (median)', data: DATA.policies.map((p) => p.published), backgroundColor: '#bbb' });
new Chart(document.getElementById('bars'), { type: 'bar', data: { labels: DATA.policies.map((p) => p.name), datasets: bars }, options: { animation: false, maintainAspectRatio: false, plugins: { tooltip: { callbacks: { afterLabel: (c) => c.datasetIndex === 0 ? 'per seed: ' + DATA.policies[c.dataIndex].perSeed.map((v) => v === null ? '–' : v.toFixed(2)).join(' ') : '' } } }, scales: { y: { beginAtZero: true, title: { display: true, text: 'unallocated GPU % at 100 % arrived' } } } } });
</script>
</body></html>
`;
}
