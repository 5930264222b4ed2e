'use strict';
// The report of one recording. Everything is found by walking the records: a section per
// top-level object, a chart per metric in it, a heatmap per histogram. Names are looked up only
// where a chart needs them (CPU by mode, probe spans, slowest requests), and a missing name
// just leaves that chart out.
PM.kMaxLines = 12;  // a metric with more series is split by its first label

PM.renderReport = function (data, main) {
  const n = data.intervals.n, all = data.intervals.series;
  const find = path => all.find(s => !s.h && s.p.length === path.length && s.p.every((p, i) => p === path[i]));
  // Elapsed time at the end of each interval: the sum of interval_s (else one per record).
  const ivs = find(['interval_s']), iv = ivs ? PM.numbers(ivs, n) : null;
  // x: the end of each interval (heatmap columns); mid: its middle (points of line charts).
  const x = new Float64Array(n), mid = new Float64Array(n);
  for (let i = 0, t = 0; i < n; i++) {
    const len = iv && Number.isFinite(iv[i]) ? iv[i] : 1;
    mid[i] = t + len / 2;
    t += len;
    x[i] = t;
  }
  x.mid = mid;
  const header = data.header || {}, summary = data.summary || {};
  const startText = header.start || summary.start;
  const start = startText ? Date.parse(startText) : NaN;
  const clock = Number.isFinite(start) ? s => new Date(start + s * 1000).toISOString().slice(11, 19) + ' UTC' : null;

  PM.renderHeader(main, data, n);
  PM.renderUnavailable(main, header, summary);
  if (n > 0) {
    PM.renderOverview(main, all, n, x, clock);
    PM.renderSections(main, all, n, x, clock);
  }
  PM.renderDistributions(main, summary);
  PM.renderProbes(main, data, summary, start);
  PM.renderSlowest(main, data, summary);
  PM.renderSummaryTable(main, summary, [...new Set(all.filter(s => s.p.length > 1).map(s => s.p[0]))]);
};

PM.renderHeader = function (main, data, n) {
  const h = data.header || {}, s = data.summary || {};
  const command = h.command || s.command;
  const rows = [];
  const add = (k, v) => { if (v !== undefined && v !== null && v !== '') rows.push({ cells: [k, String(v)] }); };
  const mode = h.mode || s.mode;
  add('command', command ? (Array.isArray(command) ? command.join(' ') : String(command)) : mode === 'system' ? 'the whole system (live monitor)' : undefined);
  add('mode', mode);
  if (s.exit_code !== undefined) add('exit status', s.exit_code + (s.signal ? ` (killed by signal ${s.signal})` : ''));
  add('ended', s.end_reason || (data.summary ? undefined : 'no summary: the run did not finish'));
  if (typeof s.duration_s === 'number') add('duration', PM.seconds(s.duration_s));
  add('start', s.start || h.start);
  add('end', s.end);
  add('host', h.host);
  add('kernel', h.kernel ? h.kernel + (h.arch ? ' ' + h.arch : '') : undefined);
  add('CPU', h.cpu_model ? h.cpu_model + (h.cpus ? ` × ${h.cpus} CPUs` : '') : h.cpus ? `${h.cpus} CPUs` : undefined);
  add('perf-monitor', h.perf_monitor_version);
  add('JSON schema', h.schema_version);
  add('interval', typeof h.interval_s === 'number' ? PM.seconds(h.interval_s) : undefined);
  const shown = new Set(['type', 'command', 'mode', 'start', 'host', 'kernel', 'arch', 'cpu_model', 'cpus', 'perf_monitor_version', 'schema_version', 'interval_s', 'unavailable', 'pid']);
  for (const [k, v] of Object.entries(h)) if (!shown.has(k) && (typeof v !== 'object' || v === null)) add(k, v);
  add('pid', h.pid || s.pid);
  add('records', `${n} intervals, ${data.spans.seen} spans${data.summary ? ', a summary' : ''}`);
  main.append(PM.el('h2', { text: 'Run' }), PM.table('kv', null, rows.map(r => ({ cells: [PM.el('th', { text: r.cells[0] }), r.cells[1]] })), 'run-header'));
  if (data.warnings.length) {
    main.append(PM.el('div', { class: 'warnings', id: 'warnings' }, PM.el('strong', { text: 'Read with warnings' }),
      PM.el('ul', {}, ...data.warnings.map(w => PM.el('li', { text: w })))));
  }
};

PM.renderUnavailable = function (main, header, summary) {
  const reasons = Object.assign(Object.create(null), PM.object(header.unavailable), PM.object(summary.unavailable));
  const keys = Object.keys(reasons);
  if (!keys.length) return;
  main.append(PM.el('h2', { text: 'Sources not available' }),
    PM.table('grid', ['source', 'why'], keys.map(k => ({ cells: [k, String(reasons[k])] }))));
};

// CPU by mode stacked, and each CPU's busy share as a heatmap-like chart.
PM.renderOverview = function (main, all, n, x, clock) {
  const util = all.filter(s => !s.h && s.p.length === 4 && s.p[0] === 'cpu' && s.p[1] === 'utilisation_percent');
  if (!util.length) return;
  const section = PM.el('div', { class: 'cards' });
  main.append(PM.el('h2', { text: 'Overview' }), section);
  const modes = util.filter(s => s.p[2] === 'all');
  if (modes.length) {
    // Busy modes first, idle last (pale), so the stack reads from the bottom.
    const order = modes.filter(s => s.p[3] !== 'idle').concat(modes.filter(s => s.p[3] === 'idle'));
    const series = order.map((s, i) => ({ label: s.p[3], y: PM.numbers(s, n), colour: s.p[3] === 'idle' ? '#d9dee7' : PM.colour(i) }));
    PM.timeChart(PM.card(section, 'CPU by mode (all CPUs, %)', true), 'CPU by mode', x, series, 'percent', { stacked: true, clock, yMax: 100 });
  }
  const idle = util.filter(s => s.p[2] !== 'all' && s.p[3] === 'idle');
  if (idle.length) {
    // Busy = 100 - idle per CPU, drawn as heatmap rows (one "bucket" per CPU).
    const cpus = idle.map(s => s.p[2]).sort((a, b) => Number(a) - Number(b) || String(a).localeCompare(String(b)));
    const series = cpus.map(c => PM.numbers(idle.find(s => s.p[2] === c), n));
    const card = PM.el('div', { class: 'card wide' }, PM.el('h3', { text: 'Busy per CPU (100 % − idle)' }));
    section.append(card);
    PM.cpuGrid(card, cpus, series, x, clock);
  }
};

// One row per CPU, colour = busy %.
PM.cpuGrid = function (card, cpus, idle, x, clock) {
  const n = x.length, box = PM.el('div', { class: 'heat' }), canvas = PM.el('canvas'), tip = PM.el('div', { class: 'tip' });
  box.append(canvas, tip);
  card.append(box, PM.el('p', { class: 'note', text: 'pale: idle, dark: busy' }));
  const cell = Math.max(5, Math.min(16, Math.floor(220 / cpus.length))), height = cell * cpus.length;
  let painted = 0;
  const draw = () => {
    const width = Math.max(200, box.clientWidth), plotW = width - PM.kHeatLeft - 8, cols = Math.max(1, Math.min(n, Math.floor(plotW)));
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round((height + 4 + PM.kHeatBottom) * dpr);
    canvas.style.height = height + 4 + PM.kHeatBottom + 'px';
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#f7f9fc';
    ctx.fillRect(0, 0, width, height + 4 + PM.kHeatBottom);
    const cw = plotW / cols;
    painted = 0;
    cpus.forEach((cpu, r) => {
      for (let c = 0; c < cols; c++) {
        const a = Math.floor(c * n / cols), b = Math.max(a + 1, Math.floor((c + 1) * n / cols));
        let s = 0, k = 0;
        for (let i = a; i < b; i++) if (Number.isFinite(idle[r][i])) { s += idle[r][i]; k++; }
        if (!k) continue;
        const busy = Math.min(100, Math.max(0, 100 - s / k));
        ctx.fillStyle = `rgb(${PM.heatColour(busy / 100)})`;
        const x0 = Math.round(PM.kHeatLeft + c * cw);
        ctx.fillRect(x0, 4 + r * cell, Math.round(PM.kHeatLeft + (c + 1) * cw) - x0, cell);
        painted++;
      }
    });
    ctx.fillStyle = '#5b6473';
    ctx.font = '11px system-ui, "DejaVu Sans", sans-serif';
    ctx.textAlign = 'right';
    ctx.textBaseline = 'middle';
    const every = Math.max(1, Math.ceil(12 / cell));
    cpus.forEach((cpu, r) => { if (r % every === 0) ctx.fillText('cpu ' + cpu, PM.kHeatLeft - 6, 4 + r * cell + cell / 2); });
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    PM.timeTicks(ctx, x[n - 1], PM.kHeatLeft, plotW, width, 4 + height + 4);
    grid.plotW = plotW;
    grid.cols = cols;
  };
  const grid = { draw };
  canvas.addEventListener('mousemove', ev => {
    const rect = canvas.getBoundingClientRect(), px = ev.clientX - rect.left - PM.kHeatLeft, py = ev.clientY - rect.top - 4;
    if (px < 0 || px >= grid.plotW || py < 0 || py >= height) { tip.style.display = 'none'; return; }
    const r = Math.floor(py / cell), c = Math.floor(px / (grid.plotW / grid.cols)), i = Math.min(n - 1, Math.floor((c + 0.5) * n / grid.cols));
    tip.textContent = `cpu ${cpus[r]} at ${PM.elapsed(x[i])}${clock ? ' (' + clock(x[i]) + ')' : ''}: ${PM.num(100 - idle[r][i])} % busy`;
    tip.style.display = 'block';
    tip.style.left = Math.min(px + PM.kHeatLeft + 12, rect.width - tip.offsetWidth - 4) + 'px';
    tip.style.top = (py + 16) + 'px';
  });
  canvas.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  draw();
  new ResizeObserver(() => draw()).observe(box);
  PM.register('cpugrid', 'Busy per CPU', canvas, painted);
};

// A section per top-level object of the interval records; a chart per metric (the next key);
// its series are the label paths below it. Histograms become heatmaps.
PM.renderSections = function (main, all, n, x, clock) {
  const sections = new Map();
  for (const s of all) {
    if (s.p.length < 2) continue;  // type, timestamp, interval_s
    if (!sections.has(s.p[0])) sections.set(s.p[0], []);
    sections.get(s.p[0]).push(s);
  }
  let heatControls = false;
  for (const [name, list] of sections) {
    const h2 = PM.el('h2', { text: name, id: 'section-' + name });
    const cards = PM.el('div', { class: 'cards' });
    main.append(h2, cards);
    const metrics = new Map();
    for (const s of list) {
      if (s.h) continue;
      const key = s.p[1];
      if (!metrics.has(key)) metrics.set(key, []);
      metrics.get(key).push(s);
    }
    for (const [metric, series] of metrics) PM.metricCharts(cards, name, metric, series, n, x, clock);
    for (const s of list.filter(s => s.h)) {
      if (!heatControls) {
        PM.heatControls(main.insertBefore(PM.el('div'), cards));
        heatControls = true;
      }
      const base = PM.field(s, 'bucket_base');
      const b = base && 'c' in base ? base.c : base ? PM.numbers(base, n).find(Number.isFinite) : 1;
      PM.heatmap(cards, s.p.join(' › '), PM.bucketRows(s, n), b, PM.unitOf(s.p), x, clock);
    }
  }
};

PM.metricCharts = function (cards, section, metric, series, n, x, clock) {
  const numeric = series.map(s => ({ s, y: PM.numbers(s, n) })).filter(({ y }) => y.some(Number.isFinite));
  if (!numeric.length) return;
  const unit = PM.unitOf(numeric[0].s.p);
  const label = s => s.p.length > 2 ? s.p.slice(2).join(' ') : s.p[1];
  const title = `${section} › ${metric}`;
  const make = (parent, t, list) => PM.timeChart(PM.card(parent, t, list.length > 6), t, x, list.map(({ s, y }) => ({ label: label(s), y })), unit, { clock });
  if (numeric.length <= PM.kMaxLines || numeric.some(({ s }) => s.p.length < 4)) {
    make(cards, title, numeric.slice(0, 60));
    return;
  }
  // Many series under a first label (per CPU, per device): "all" (or the first) shown, the
  // others one chart each in a closed <details>, made when opened.
  const groups = new Map();
  for (const e of numeric) {
    if (!groups.has(e.s.p[2])) groups.set(e.s.p[2], []);
    groups.get(e.s.p[2]).push(e);
  }
  const keys = [...groups.keys()];
  const first = keys.includes('all') ? 'all' : keys[0];
  const lbl = s => s.p.slice(3).join(' ');
  const chart = (parent, k) => PM.timeChart(PM.card(parent, `${title} › ${k}`), `${title} › ${k}`, x, groups.get(k).map(({ s, y }) => ({ label: lbl(s), y })), unit, { clock });
  chart(cards, first);
  const rest = keys.filter(k => k !== first);
  if (!rest.length) return;
  const inner = PM.el('div', { class: 'cards' });
  const details = PM.el('details', { class: 'more' }, PM.el('summary', { text: `${title}: ${rest.length} more (${rest.slice(0, 4).join(', ')}${rest.length > 4 ? ', …' : ''})` }), inner);
  cards.append(details);
  PM.defer(details, () => rest.forEach(k => chart(inner, k)));
};

// Every histogram of the summary: its distribution over the whole run.
PM.renderDistributions = function (main, summary) {
  const hists = PM.flatten(summary).filter(([p, v]) => PM.isHistogram(v) && v.buckets.some(b => b > 0) && p[0] !== 'probe');
  if (!hists.length) return;
  const cards = PM.el('div', { class: 'cards' });
  main.append(PM.el('h2', { text: 'Distributions over the run' }), cards);
  for (const [p, h] of hists) PM.histogramChart(cards, p.join(' › '), h, PM.unitOf(p));
};
PM.histogramChart = function (parent, title, h, unit, extra = []) {
  let lo = h.buckets.findIndex(b => b > 0), hi = h.buckets.length - 1;
  while (hi > 0 && !(h.buckets[hi] > 0)) hi--;
  for (const e of extra) {
    const l = e.buckets.findIndex(b => b > 0);
    if (l >= 0) lo = lo < 0 ? l : Math.min(lo, l);
    let k = e.buckets.length - 1;
    while (k > 0 && !(e.buckets[k] > 0)) k--;
    hi = Math.max(hi, k);
  }
  lo = Math.max(0, lo);
  const labels = [];
  for (let k = lo; k <= hi; k++) labels.push(PM.bucketLabel(h.bucket_base, k, unit));
  const count = h.buckets.reduce((s, b) => s + b, 0);
  const note = `${PM.num(count)} values` + (typeof h.p50 === 'number' ? `, p50 ${PM.fmt(h.p50, unit)}` : '') + (typeof h.p99 === 'number' ? `, p99 ${PM.fmt(h.p99, unit)}` : '');
  const series = [{ label: 'count', values: h.buckets.slice(lo, hi + 1) }].concat(extra.map(e => ({ label: e.label, values: e.buckets.slice(lo, hi + 1), colour: e.colour })));
  return PM.barChart(PM.card(parent, title, false, note), title, labels, series, '');
};

// Probed functions: latency distribution, and where a call's time went.
PM.renderProbes = function (main, data, summary, start) {
  const probe = PM.object(summary.probe), lat = PM.object(probe.latency_seconds), totals = PM.object(data.spans.totals);
  const fns = new Set(Object.keys(lat).concat(Object.keys(totals)));
  if (!fns.size) return;
  const cards = PM.el('div', { class: 'cards' });
  main.append(PM.el('h2', { text: 'Probed functions', id: 'section-probes' }), cards);
  // Per call, on CPU / run queue / blocked: the probe family's totals, else the spans'.
  const parts = [['on CPU', 'on_cpu_seconds', 'on_cpu_s'], ['run queue', 'runq_seconds', 'runq_s'], ['blocked', 'blocked_seconds', 'blocked_s']];
  const names = [...fns];
  const split = names.map(fn => {
    const l = PM.object(PM.own(lat, fn)), tot = PM.own(totals, fn) || { count: 0, sums: {} }, sums = PM.object(tot.sums);
    const calls = PM.own(PM.object(probe.calls), fn) ?? l.count ?? tot.count;
    const values = parts.map(([, fam, span]) => {
      const v = PM.own(PM.object(PM.own(probe, fam)), fn);
      if (typeof v === 'number' && calls) return v / calls;
      return tot.count && typeof PM.own(sums, span) === 'number' ? sums[span] / tot.count : NaN;
    });
    const mean = typeof l.count === 'number' && l.count ? l.sum / l.count : tot.count && typeof PM.own(sums, 'latency_s') === 'number' ? sums.latency_s / tot.count : NaN;
    const known = values.filter(Number.isFinite).reduce((s, v) => s + v, 0);
    return values.concat([Number.isFinite(mean) && mean > known ? mean - known : 0]);
  });
  if (split.some(v => v.slice(0, 3).some(Number.isFinite))) {
    const labels = parts.map(p => p[0]).concat(['other']);
    PM.barChart(PM.card(cards, 'Where a call\'s time goes (mean per call)', true), 'probe split', names,
      labels.map((l, i) => ({ label: l, values: split.map(v => v[i]), colour: PM.partColour(['on_cpu_s', 'runq_s', 'blocked_s', 'other'][i], i) })), 'seconds', { stacked: true, horizontal: true });
  }
  for (const fn of names) {
    const h = PM.own(lat, fn);
    if (PM.isHistogram(h) && h.buckets.some(b => b > 0)) PM.histogramChart(cards, `${fn}: latency`, h, 'seconds');
  }
  // Each kept call: when it started and how long it took.
  const kept = data.spans.kept;
  if (kept.n > 0 && Number.isFinite(start)) {
    const spans = PM.records(kept);
    const byFn = new Map();
    for (const s of spans) {
      const t = (Date.parse(s.start) - start) / 1000;
      if (!Number.isFinite(t) || typeof s.latency_s !== 'number') continue;
      if (!byFn.has(s.function)) byFn.set(s.function, []);
      byFn.get(s.function).push({ x: t, y: s.latency_s });
    }
    if (byFn.size) {
      const box = PM.card(cards, `Calls: start and latency (${kept.n} of ${data.spans.seen})`, true);
      const canvas = PM.el('canvas');
      box.append(canvas);
      let points = 0;
      const datasets = [...byFn].map(([fn, pts], i) => { points += pts.length; return { label: fn, data: pts, backgroundColor: PM.colour(i) + 'aa', borderColor: PM.colour(i), pointRadius: 2, borderWidth: 0 }; });
      const end = Math.max(...[...byFn.values()].flat().map(p => p.x), 1);
      const chart = new Chart(canvas, { type: 'scatter', data: { datasets }, options: { parsing: false,
        scales: { x: { type: 'linear', min: 0, ticks: { callback: v => PM.elapsed(v), stepSize: PM.timeStep(end) } }, y: { type: 'logarithmic', ticks: { callback: v => PM.seconds(v) } } },
        plugins: { tooltip: { callbacks: { label: it => `${it.dataset.label} at ${PM.elapsed(it.parsed.x)}: ${PM.seconds(it.parsed.y)}` } } } } });
      PM.register('scatter', 'calls', canvas, points, { chart, datasets: datasets.length });
    }
  }
};

// The same colour for a part of a call's time in every chart.
PM.partColour = (field, i) => PM.own({ on_cpu_s: '#4e79a7', runq_s: '#f28e2b', blocked_s: '#e15759', other: '#bab0ac' }, field) || PM.colour(i + 4);

// The slowest requests: each one's latency split into its parts (fields ending in _s).
PM.renderSlowest = function (main, data, summary) {
  let slow = Array.isArray(summary.slowest_requests) ? summary.slowest_requests : null;
  if (!slow && data.spans.kept.n) {
    slow = PM.records(data.spans.kept).filter(s => 'request_id' in s && typeof s.latency_s === 'number').sort((a, b) => b.latency_s - a.latency_s).slice(0, 5);
  }
  if (!slow || !slow.length) return;
  const known = ['on_cpu_s', 'runq_s', 'blocked_s'];
  const fields = [...new Set(slow.flatMap(s => Object.keys(s).filter(k => /_s$/.test(k) && k !== 'latency_s' && typeof s[k] === 'number')))]
    .sort((a, b) => (known.indexOf(a) + 1 || 99) - (known.indexOf(b) + 1 || 99));
  const labels = slow.map(s => `request ${s.request_id ?? '?'}` + (s.function ? ` (${s.function})` : ''));
  const names = { on_cpu_s: 'on CPU', runq_s: 'run queue', blocked_s: 'blocked' };
  const series = fields.map((f, i) => ({ label: PM.own(names, f) || f.replace(/_s$/, '').replace(/_/g, ' '), values: slow.map(s => s[f] ?? 0), colour: PM.partColour(f, i) }));
  const other = slow.map(s => { const known = fields.reduce((a, f) => a + (s[f] || 0), 0); return typeof s.latency_s === 'number' && s.latency_s > known ? s.latency_s - known : 0; });
  if (other.some(v => v > 0)) series.push({ label: 'other', values: other, colour: '#bab0ac' });
  const cards = PM.el('div', { class: 'cards' });
  main.append(PM.el('h2', { text: 'Slowest requests' }), cards);
  PM.barChart(PM.card(cards, 'Slowest requests: where the time went', true), 'slowest requests', labels, series, 'seconds', { stacked: true, horizontal: true });
};

// Every figure of the summary, grouped by section.
PM.renderSummaryTable = function (main, summary, sectionNames) {
  const skip = new Set(['type', 'command', 'unavailable', 'slowest_requests']);
  // A flat key ("block_io_total_bytes") goes with the longest section its name starts with.
  const sections = [...new Set(sectionNames.concat(Object.keys(summary).filter(k => summary[k] !== null && typeof summary[k] === 'object' && !Array.isArray(summary[k]))))]
    .sort((a, b) => b.length - a.length);
  const groupOf = p => p.length > 1 ? p[0] : sections.find(s => p[0].startsWith(s + '_')) || p[0].split('_')[0];
  const groups = new Map();
  for (const [p, v] of PM.flatten(Object.fromEntries(Object.entries(summary).filter(([k]) => !skip.has(k))))) {
    const g = groupOf(p);
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push([p, v]);
  }
  const rows = [];
  for (const [group, entries] of groups) {
    rows.push({ attrs: {}, cells: [PM.el('strong', { text: group }), ''] });
    for (const [p, v] of entries) PM.summaryRow(rows, p, v);
  }
  if (!rows.length) return;
  main.append(PM.el('h2', { text: 'Summary' }), PM.table('grid', null, rows, 'summary-table'));
};
PM.summaryRow = function (rows, p, v) {
  const unit = PM.unitOf(p);
  let text;
  if (PM.isHistogram(v)) {
    const count = v.count ?? v.buckets.reduce((s, b) => s + b, 0);
    text = `${PM.num(count)} values` + (count && typeof v.sum === 'number' ? `, mean ${PM.fmt(v.sum / count, unit, true)}` : '') +
      ['p50', 'p90', 'p99'].filter(q => typeof v[q] === 'number').map(q => `, ${q} < ${PM.fmt(v[q], unit, true)}`).join('');
  } else {
    text = PM.fmt(v, unit, true);
  }
  rows.push({ cells: [p.join(' › '), PM.el('td', { class: 'num', text, title: JSON.stringify(v).slice(0, 200) })] });
};
