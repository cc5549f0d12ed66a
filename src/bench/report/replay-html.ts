/** The HTML report of `sits bench replay`: summary table, allocated GPU % and waiting pods over time per policy. */
import type { ReplayResult } from '../replay/replay.ts';
import { chartJsSource, escapeHtml, scriptJson } from './chartjs.ts';

const COLORS = ['#4e79a7', '#f28e2b', '#e15759', '#76b7b2', '#59a14f', '#edc948', '#b07aa1'];

export function replayReportHtml(title: string, note: string, results: readonly ReplayResult[]): string {
  const head = ['policy', 'pods', 'placed', 'never placed', 'GPU util %', 'peak %', 'delay mean s', 'p50', 'p90', 'p99', 'evictions'];
  const rows = results.map((r) => [escapeHtml(r.policy), r.pods, r.placedPods, r.neverPlaced.pods, r.gpuUtilisationPct.toFixed(2), r.peakAllocationPct.toFixed(1), r.queueDelayS.mean.toFixed(0), r.queueDelayS.p50.toFixed(0), r.queueDelayS.p90.toFixed(0), r.queueDelayS.p99.toFixed(0), r.evictions]);
  const table = `<table><thead><tr>${head.map((h) => `<th>${h}</th>`).join('')}</tr></thead><tbody>${rows.map((r) => `<tr>${r.map((c, i) => (i === 0 ? `<th>${c}</th>` : `<td>${c}</td>`)).join('')}</tr>`).join('')}</tbody></table>`;
  const data = results.map((r, i) => ({ name: r.policy, color: COLORS[i % COLORS.length], t: r.series.tS.map((s) => Math.round((s / 3600) * 100) / 100), alloc: r.series.allocatedPct, waiting: r.series.waitingPods }));
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>SITS · replay · ${escapeHtml(title)}</title>
<style>body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 16px}h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:12px 0}th,td{padding:4px 10px;border-bottom:1px solid #ddd;text-align:right}thead th{background:#f4f4f4}tbody th{text-align:left}.chart{position:relative;height:340px}p.note{color:#555}</style>
</head><body>
<h1>Time-based replay · ${escapeHtml(title)}</h1>
<p class="note">${escapeHtml(note)}</p>
${table}
<h2>Allocated GPU over time</h2><div class="chart"><canvas id="alloc"></canvas></div>
<h2>Pods waiting over time</h2><div class="chart"><canvas id="wait"></canvas></div>
<script>${chartJsSource()}</script>
<script>
const DATA = ${scriptJson(data)};
function chart(id, key, title) {
  new Chart(document.getElementById(id), { type: 'line', data: { datasets: DATA.map((p) => ({ label: p.name, data: p.t.map((x, i) => ({ x, y: p[key][i] })), borderColor: p.color, backgroundColor: p.color, pointRadius: 0, borderWidth: 1.5 })) },
    options: { animation: false, maintainAspectRatio: false, parsing: false, scales: { x: { type: 'linear', title: { display: true, text: 'hours since the first arrival' } }, y: { beginAtZero: true, title: { display: true, text: title } } } } });
}
chart('alloc', 'alloc', 'allocated GPU %');
chart('wait', 'waiting', 'pods waiting');
</script></body></html>
`;
}
