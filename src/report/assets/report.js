'use strict';
// The report of one recording. Everything is found by walking the records: a section per
// top-level object, a chart per metric in it, a heatmap per histogram. Names are looked up only
// where a chart needs them (CPU by mode, probe spans, slowest requests), and a missing name
// just leaves that chart out.
PM.kMaxLines = 12;  // a metric with more series is split by its first label

PM.renderReport = function (data, main) {
  PM.metrics = PM.object(data.metrics);
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
  x.iv = iv;
  const header = data.header || {}, summary = data.summary || {};
  const startText = header.start || summary.start;
  const start = startText ? Date.parse(startText) : NaN;
  const clock = Number.isFinite(start) ? s => new Date(start + s * 1000).toISOString().slice(11, 19) + ' UTC' : null;

  const lost = PM.lostData(all, n, data.summary);
  if (lost.length) data.warnings = [`data was lost: ${lost.join(', ')}`].concat(data.warnings);
  const mode = header.mode || summary.mode;
  // A command's run leads with the answer: what it cost, where its time went, its timeline;
  // then its probed functions; then the system around it; what is missing last.
  const tree = mode === 'run' || mode === 'attach';
  if (tree && data.summary) PM.renderAnswer(main, data, all, n, x, clock);
  else PM.renderHeader(main, data, n);
  if (tree) {
    if (n > 0) PM.renderSections(main, all.filter(s => s.p[0] === 'process_tree'), n, x, clock);
    PM.renderProbes(main, data, summary, start);
    PM.renderSlowest(main, data, summary);
    PM.renderStacks(main, summary);
  }
  if (n > 0) {
    if (tree) main.append(PM.el('h2', { text: 'The system around it', id: 'section-system' }));
    PM.renderOverview(main, all, n, x, clock);
    PM.renderWho(main, all, n, x, clock);
    PM.renderSections(main, tree ? all.filter(s => s.p[0] !== 'process_tree') : all, n, x, clock);
  }
  PM.renderDistributions(main, summary);
  if (!tree) {
    PM.renderProbes(main, data, summary, start);
    PM.renderSlowest(main, data, summary);
    PM.renderStacks(main, summary);
  }
  PM.renderSummaryTable(main, summary);
  if (tree && data.summary) PM.renderHeader(main, data, n, 'About this recording');
  PM.renderUnavailable(main, header, summary);
};

// The first screen of a command's report: the command, how it ended and how long it took, its
// CPU, where its tasks' time went (on a CPU, waiting on the run queue, blocked) as a bar and
// over time, peak memory and I/O.
PM.renderAnswer = function (main, data, all, n, x, clock) {
  const h = data.header || {}, s = data.summary || {};
  const num = k => typeof s[k] === 'number' ? s[k] : NaN;
  const command = Array.isArray(s.command || h.command) ? (s.command || h.command).map(PM.shellWord).join(' ') : String(s.command || h.command || `PID ${h.pid || s.pid}`);
  const ended = s.signal ? `killed by signal ${s.signal}` : s.exit_code !== undefined ? `exit status ${s.exit_code}` : String(s.end_reason || 'did not finish');
  const wall = num('duration_s'), cpu = num('proc_cpu_user_seconds') + num('proc_cpu_system_seconds');
  const box = PM.el('div', { class: 'answer', id: 'answer' });
  box.append(PM.el('h2', { text: h.mode === 'attach' ? 'The process tree' : 'The command' }),
    PM.el('p', { class: 'command' }, PM.el('code', { text: command })),
    PM.table('kv', null, [
      ['ended', ended + (s.end_reason && !s.signal && s.end_reason !== 'exited' ? ` (${s.end_reason})` : '')],
      ['wall time', Number.isFinite(wall) ? PM.seconds(wall) : 'n/a'],
      ['CPU', Number.isFinite(cpu) ? `${PM.seconds(cpu)} (user ${PM.seconds(num('proc_cpu_user_seconds'))}, system ${PM.seconds(num('proc_cpu_system_seconds'))})` +
        (wall > 0 ? `: ${PM.num(100 * cpu / wall)} % of one CPU` : '') : 'n/a'],
      ['peak memory', Number.isFinite(num('proc_rss_max')) ? `RSS ${PM.bytes(num('proc_rss_max'))}` + (Number.isFinite(num('proc_pss_max')) ? `, PSS ${PM.bytes(num('proc_pss_max'))}` : '') : 'n/a'],
      ['storage I/O', Number.isFinite(num('proc_io_read_bytes')) ? `read ${PM.bytes(num('proc_io_read_bytes'))}, written ${PM.bytes(num('proc_io_write_bytes'))}` : 'n/a'],
      ['processes', Number.isFinite(num('proc_processes_seen_max')) ? `${PM.num(num('proc_processes_seen_max'))} seen, at most ${PM.num(num('proc_processes_max'))} at once` : 'n/a'],
    ].concat(PM.probeAnswer(s)).map(([k, v]) => ({ cells: [PM.el('th', { text: k }), v] })), 'answer-table'));
  main.append(box);
  if (data.warnings.length) {
    main.append(PM.el('div', { class: 'warnings', id: 'warnings' }, PM.el('strong', { text: 'Read with warnings' }),
      PM.el('ul', {}, ...data.warnings.map(w => PM.el('li', { text: w })))));
  }
  const cards = PM.el('div', { class: 'cards' });
  box.append(cards);
  const parts = [['on CPU', 'proc_on_cpu_seconds', 'on_cpu_seconds', 'on_cpu_s'], ['run queue', 'proc_runq_wait_seconds', 'runq_wait_seconds', 'runq_s'],
    ['blocked', 'proc_blocked_seconds', 'blocked_seconds', 'blocked_s']];
  if (parts.some(([, k]) => Number.isFinite(num(k)))) {
    PM.barChart(PM.card(cards, 'Where the tasks\' time went, over the run', false, 'summed over the tree\'s tasks: more than the wall time when several ran at once'),
      'time split', ['the tree'], parts.map(([label, k, , field], i) => ({ label, values: [num(k)], colour: PM.partColour(field, i) })), 'seconds', { stacked: true, horizontal: true });
  }
  // Over time: each interval's seconds in each state per second of the interval (tasks on average).
  const find = k => all.find(e => !e.h && e.p.length === 2 && e.p[0] === 'process_tree' && e.p[1] === k);
  const ivs = all.find(e => e.p.length === 1 && e.p[0] === 'interval_s'), iv = ivs ? PM.numbers(ivs, n) : null;
  const series = parts.map(([label, , k, field], i) => {
    const e = find(k);
    if (!e) return null;
    const y = PM.numbers(e, n).map((v, j) => iv && iv[j] > 0 ? v / iv[j] : v);
    return { label, y: Float64Array.from(y), colour: PM.partColour(field, i) };
  }).filter(Boolean);
  if (n > 0 && series.length) {
    PM.timeChart(PM.card(cards, 'The tree\'s tasks over time: on a CPU, waiting, blocked (tasks on average)'), 'tree timeline', x, series, '', { stacked: true, clock });
  }
};
// The probed functions in the answer: the three that took longest in all, each with its calls,
// mean and longest call and where its time went; then the slowest request.
PM.probeAnswer = function (s) {
  const p = s.probe && typeof s.probe === 'object' ? s.probe : null;
  if (!p || !p.calls || typeof p.calls !== 'object') return [];
  const of = (k, f) => p[k] && typeof p[k][f] === 'number' ? p[k][f] : NaN;
  const rows = Object.keys(p.calls).map(f => {
    const lat = p.latency_seconds && p.latency_seconds[f] || {}, calls = Number(p.calls[f]);
    return { f, calls, sum: typeof lat.sum === 'number' ? lat.sum : NaN, max: p.latency_max_seconds && p.latency_max_seconds[f] ? p.latency_max_seconds[f].max : NaN };
  }).filter(r => r.calls > 0).sort((a, b) => (b.sum || 0) - (a.sum || 0)).slice(0, 3);
  const split = (on, rq, bl) => `on CPU ${PM.seconds(on)}, run queue ${PM.seconds(rq)}, blocked ${PM.seconds(bl)}`;
  const out = rows.map((r, i) => [i === 0 ? 'probed functions' : '',
    `${r.f}: ${PM.num(r.calls)} call${r.calls === 1 ? '' : 's'}, mean ${PM.seconds(r.sum / r.calls)}, longest ${PM.seconds(r.max)} ` +
    `(${split(of('on_cpu_seconds', r.f), of('runq_seconds', r.f), of('blocked_seconds', r.f))})`]);
  const slow = Array.isArray(s.slowest_requests) ? s.slowest_requests[0] : null;
  if (slow && typeof slow === 'object') {
    const id = slow.request_id !== undefined ? `, request ${slow.request_id}` : '';
    out.push(['slowest request', `${slow.function}${id}: ${PM.seconds(Number(slow.latency_s))} ` +
      `(${split(Number(slow.on_cpu_s), Number(slow.runq_s), Number(slow.blocked_s))})`]);
  }
  return out;
};
// A command's word as a shell needs it: quoted where it holds anything but safe characters.
PM.shellWord = w => /^[A-Za-z0-9_\/.,:=@%+-]+$/.test(String(w)) ? String(w) : `'${String(w).replace(/'/g, `'\\''`)}'`;

PM.renderHeader = function (main, data, n, heading = 'Run') {
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
  main.append(PM.el('h2', { text: heading }), PM.table('kv', null, rows.map(r => ({ cells: [PM.el('th', { text: r.cells[0] }), r.cells[1]] })), 'run-header'));
  if (data.warnings.length && heading === 'Run') {
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

// Who used the machine: the top lists of every interval, summed per process (PID and name) and
// per cgroup, as sortable tables, and the busiest processes' CPU over time.
PM.kWhoRows = 20;
PM.whoTotals = function (lists, key, name) {
  const rows = new Map();
  lists.forEach((list, i) => {
    if (!Array.isArray(list)) return;
    for (const r of list) {
      if (r === null || typeof r !== 'object') continue;
      const k = key(r);
      if (!rows.has(k)) rows.set(k, { key: k, name: name(r), intervals: 0, cpu_s: 0, runq_s: 0, blocked_s: 0, io_bytes: 0, faults: 0, rss_max: NaN, cpu: new Float64Array(lists.length).fill(NaN) });
      const t = rows.get(k), num = f => typeof r[f] === 'number' ? r[f] : 0;
      t.intervals++;
      t.cpu_s += num('cpu_user_s') + num('cpu_system_s');
      t.runq_s += num('runq_s');
      t.blocked_s += num('blocked_s');
      t.io_bytes += num('io_read_bytes') + num('io_write_bytes');
      t.faults += num('page_faults');
      if (typeof r.rss_bytes === 'number') t.rss_max = Number.isFinite(t.rss_max) ? Math.max(t.rss_max, r.rss_bytes) : r.rss_bytes;
      t.cpu[i] = num('cpu_percent');
    }
  });
  return [...rows.values()].sort((a, b) => b.cpu_s - a.cpu_s);
};
PM.renderWho = function (main, all, n, x, clock) {
  const list = name => all.find(s => !s.h && s.p.length === 2 && s.p[0] === 'top' && s.p[1] === name);
  const procs = list('processes'), cgroups = list('cgroups');
  if (!procs && !cgroups) return;
  const show = v => typeof v === 'string' ? v : '';
  PM.who = {
    processes: procs ? PM.whoTotals(PM.cells(procs, n).values, r => `${r.pid} ${show(r.comm)}`, r => ({ pid: r.pid, comm: show(r.comm), command: show(r.command), user: show(r.user) })) : [],
    cgroups: cgroups ? PM.whoTotals(PM.cells(cgroups, n).values, r => show(r.cgroup) + (r.with_descendants ? ' (with its descendants)' : ''),
      r => ({ cgroup: show(r.cgroup) + (r.with_descendants ? ' (with its descendants)' : '') })) : [],
  };
  if (!PM.who.processes.length && !PM.who.cgroups.length) return;
  main.append(PM.el('h2', { text: 'Who used the machine', id: 'section-who' }),
    PM.el('p', { class: 'note', text: 'Summed over the intervals in which each was in the top lists (perf-monitor --top N): a process that was busy only now and then is counted where it was listed.' }));
  const columns = [['CPU', 'cpu_s', 'seconds'], ['run queue', 'runq_s', 'seconds'], ['blocked', 'blocked_s', 'seconds'], ['storage I/O', 'io_bytes', 'bytes'], ['page faults', 'faults', ''], ['peak RSS', 'rss_max', 'bytes']];
  const table = (id, head, rows, cells) => {
    const box = PM.el('div');
    let by = 'cpu_s';
    const draw = () => {
      const sorted = rows.slice().sort((a, b) => (Number.isFinite(b[by]) ? b[by] : -1) - (Number.isFinite(a[by]) ? a[by] : -1)).slice(0, PM.kWhoRows);
      const header = head.concat(columns.map(([label, field]) => {
        const th = PM.el('th', { class: 'num sort' + (field === by ? ' sorted' : ''), text: label + (field === by ? ' ▼' : ''), title: 'sort by ' + label });
        th.addEventListener('click', () => { by = field; draw(); });
        return th;
      }));
      const t = PM.table('grid', header, sorted.map(r => ({ cells: cells(r).concat(columns.map(([, f, unit]) => PM.el('td', { class: 'num', text: Number.isFinite(r[f]) ? PM.fmt(r[f], unit, true) : 'n/a' }))) })), id);
      box.replaceChildren(t);
    };
    draw();
    return box;
  };
  if (PM.who.processes.length) {
    main.append(PM.el('h3', { text: `Processes (${PM.who.processes.length})` }),
      table('who-processes', ['PID', 'name', 'command'], PM.who.processes, r => [String(r.name.pid), r.name.comm, PM.el('td', { class: 'cmd', text: r.name.command || r.name.comm, title: r.name.command || r.name.comm })]));
    // The busiest processes' CPU over time, stacked.
    const top = PM.who.processes.slice(0, 8);
    const cards = PM.el('div', { class: 'cards' });
    main.append(cards);
    PM.timeChart(PM.card(cards, 'The busiest processes: CPU over time (% of one CPU)', true), 'busiest processes', x,
      top.map((r, i) => ({ label: `${r.name.comm} (${r.name.pid})`, y: Float64Array.from(r.cpu, v => Number.isFinite(v) ? v : 0), colour: PM.colour(i) })), 'percent', { stacked: true, clock });
  }
  if (PM.who.cgroups.length) {
    main.append(PM.el('h3', { text: `Cgroups (${PM.who.cgroups.length})` }),
      table('who-cgroups', ['cgroup'], PM.who.cgroups, r => [r.name.cgroup]));
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

// The monitor's health counters (what it could not count): shown only where they are not zero.
PM.isHealth = path => path.some(p => /(^|_)(dropped|overruns?|too_deep|untracked|missed|lost)($|_)/.test(String(p)));
PM.total = (s, n) => PM.numbers(s, n).reduce((a, v) => a + (Number.isFinite(v) ? Math.abs(v) : 0), 0);
// "probe › spans dropped 12": each health counter that counted something, in the intervals or
// the summary.
PM.lostData = function (all, n, summary) {
  const lost = new Map();
  for (const s of all) if (!s.h && s.p.length > 1 && PM.isHealth(s.p)) {
    const t = PM.total(s, n);
    if (t > 0) lost.set(s.p.join(' '), t);
  }
  for (const [p, v] of PM.flatten(PM.object(summary))) {
    if (typeof v === 'number' && v > 0 && PM.isHealth(p) && !p.includes('max_lower_bound')) lost.set(p.join(' '), v);
  }
  return [...lost].slice(0, 8).map(([k, v]) => `${PM.words(k)} ${PM.num(v)}`);
};

// A section per top-level object of the interval records; a chart per metric (the next key);
// its series are the label paths below it. Histograms become heatmaps. What never moved is not
// charted: all-zero metrics (and, over more than three intervals, constant ones) are named in
// one line at the section's end; health counters that stayed zero are not shown at all.
PM.renderSections = function (main, all, n, x, clock) {
  const sections = new Map();
  for (const s of all) {
    if (s.p.length < 2) continue;  // type, timestamp, interval_s
    if (!sections.has(s.p[0])) sections.set(s.p[0], []);
    sections.get(s.p[0]).push(s);
  }
  let heatControls = false;
  for (const [name, list] of sections) {
    const metrics = new Map();
    for (const s of list) {
      if (s.h) continue;
      const key = s.p[1];
      if (!metrics.has(key)) metrics.set(key, []);
      metrics.get(key).push(s);
    }
    const moving = [], unchanged = [];
    for (const [metric, series] of metrics) {
      const values = series.map(s => PM.numbers(s, n).filter(Number.isFinite));
      const zero = values.every(v => v.every(e => e === 0));
      const constant = n > 3 && values.every(v => v.length === n && v.every(e => e === v[0]));
      if (zero && PM.isHealth([name, metric])) continue;
      if (zero || constant) unchanged.push([metric, series, zero]);
      else moving.push([metric, series]);
    }
    const hists = list.filter(s => s.h).filter(s => {
      const count = PM.field(s, 'count');
      return !count || PM.total(count, n) > 0;
    });
    if (!moving.length && !hists.length && !unchanged.length) continue;
    const h2 = PM.el('h2', { text: PM.sectionTitle(name), id: 'section-' + name });
    const cards = PM.el('div', { class: 'cards' });
    main.append(h2, cards);
    for (const [metric, series] of moving) PM.metricCharts(cards, name, metric, series, n, x, clock);
    for (const s of hists) {
      if (!heatControls) {
        PM.heatControls(main.insertBefore(PM.el('div'), cards));
        heatControls = true;
      }
      const base = PM.field(s, 'bucket_base');
      const b = base && 'c' in base ? base.c : base ? PM.numbers(base, n).find(Number.isFinite) : 1;
      PM.heatmap(cards, PM.title(s.p) + (s.p.length > 2 ? ': ' + s.p.slice(2).join(' ') : ''), PM.bucketRows(s, n), b, PM.unitOf(s.p), x, clock);
    }
    if (unchanged.length) {
      const said = unchanged.map(([metric, series, zero]) => {
        const v = zero ? 0 : PM.numbers(series[0], n).find(Number.isFinite);
        return `${PM.words(metric)} ${PM.fmt(v, PM.unitOf(series[0].p), true)}${series.length > 1 ? ` (${series.length} series)` : ''}`;
      });
      main.append(PM.el('details', { class: 'unchanged' }, PM.el('summary', { text: `unchanged: ${said.slice(0, 6).join(', ')}${said.length > 6 ? `, … (${said.length})` : ''}` }),
        PM.el('ul', {}, ...said.map(t => PM.el('li', { text: t })))));
    }
  }
};

PM.metricCharts = function (cards, section, metric, series, n, x, clock) {
  // A counter's figure is what it counted in the interval: drawn per second, so that intervals
  // of different lengths (a recorded run's first second in tenths) compare.
  const perSecond = PM.describe([section, metric]).kind === 'counter' && x.iv;
  const values = s => {
    const y = PM.numbers(s, n);
    if (perSecond) for (let i = 0; i < n; i++) y[i] = x.iv[i] > 0 ? y[i] / x.iv[i] : NaN;
    return y;
  };
  const numeric = series.map(s => ({ s, y: values(s) })).filter(({ y }) => y.some(Number.isFinite));
  if (!numeric.length) return;
  const unit = PM.unitOf(numeric[0].s.p);
  const label = s => s.p.length > 2 ? s.p.slice(2).join(' ') : s.p[1];
  const title = PM.title([section, metric]) + (perSecond ? ' (per second)' : '');
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
  const chart = (parent, k) => PM.timeChart(PM.card(parent, `${title}: ${k}`), `${title}: ${k}`, x, groups.get(k).map(({ s, y }) => ({ label: lbl(s), y })), unit, { clock });
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
  for (const [p, h] of hists) PM.histogramChart(cards, PM.title(p) + (p.length > 2 ? ': ' + p.slice(2).join(' ') : ''), h, PM.unitOf(p));
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
  PM.renderBlockedStacks(cards, slow);
};

// Every figure of the summary, grouped by what it is about (the run, time, memory, I/O, the
// scheduler, counters, probes, the monitor itself), each named in words.
PM.kSummaryGroups = ['the run', "the command's process tree", 'time', 'memory', 'I/O', 'scheduler', 'hardware and software counters', 'probed functions', 'power and temperature', 'the monitor itself', 'other'];
PM.summaryGroup = function (p) {
  const k = String(p[0]), all = p.map(String).join(' ');
  if (['mode', 'pid', 'exit_code', 'signal', 'end_reason', 'start', 'end', 'duration_s'].includes(k)) return 'the run';
  if (k === 'self' || PM.isHealth(p)) return 'the monitor itself';
  if (k.startsWith('proc_')) return "the command's process tree";
  if (k === 'probe' || k.startsWith('proc_probe')) return 'probed functions';
  if (k === 'pmc') return 'hardware and software counters';
  if (/^(energy|thermal|power)/.test(k)) return 'power and temperature';
  if (/(^|_)(io|bio|block|disk|rchar|wchar)(_|$)/.test(all) || k === 'block_io') return 'I/O';
  if (/(^|_)(rss|pss|vm_size|shared|anon|mem|memory|swap|cached|faults?|numa)(_|$)/.test(all) || k === 'memory' || k === 'numa') return 'memory';
  if (/(^|_)(switches|wakeups|runq|scheduler|processes|threads|forks|procs|load1|load5|load15|tasks)(_|$)/.test(all) || k === 'scheduler') return 'scheduler';
  if (/(^|_)(cpu|seconds|pressure|blocked)(_|$)/.test(all) || k === 'cpu' || k === 'pressure') return 'time';
  return 'other';
};
// A summary figure's name in words: its description where the recording has one (the labels
// after it), else its name ("proc_cpu_user_seconds" -> "cpu user seconds (the tree)").
PM.kRunNames = { mode: 'mode', pid: 'PID', exit_code: 'exit status', signal: 'killed by signal', end_reason: 'ended because', start: 'started', end: 'ended', duration_s: 'wall time' };
PM.summaryName = function (p) {
  if (p.length === 1 && PM.own(PM.kRunNames, String(p[0]))) return PM.kRunNames[p[0]];
  const d = PM.describe(p), help = typeof d.help === 'string' && d.help.trim() ? d.help.trim() : '';
  const flat = p.length === 1 || !PM.own(PM.metrics, p[0] + '.' + p[1]);
  const rest = p.slice(flat ? 1 : 2).map(String).filter(x => x !== 'min' && x !== 'max');
  // A gauge's extremes: {min, max} below its name, or the flat names' _min and _max.
  const last = String(p[p.length - 1]), m = /(^|_)(min|max)$/.exec(p.length === 1 ? String(p[0]) : last);
  const bound = m ? ` (${m[2] === 'max' ? 'highest' : 'lowest'})` : '';
  let base = help;
  if (!base) {
    const k = String(p[0]);
    base = k.startsWith('proc_') ? PM.words(k.slice(5).replace(/_(min|max)$/, '')) + ' (the tree)' : k.startsWith('global_') ? PM.words(k.slice(7).replace(/_(min|max)$/, '')) + ' (the system)' : PM.words(p.length > 1 && !flat ? p[1] : k) + (p.length > 1 && !flat ? ` (${PM.words(k)})` : '');
  }
  return base + (rest.length ? ': ' + rest.join(' ') : '') + bound;
};
PM.renderSummaryTable = function (main, summary) {
  const skip = new Set(['type', 'command', 'unavailable', 'slowest_requests', 'stacks']);
  const groups = new Map(PM.kSummaryGroups.map(g => [g, []]));
  for (const [p, v] of PM.flatten(Object.fromEntries(Object.entries(summary).filter(([k]) => !skip.has(k))))) {
    if (PM.isHealth(p) && v === 0) continue;  // the monitor's health: only what it lost
    groups.get(PM.summaryGroup(p)).push([p, v]);
  }
  // Shown: each group's figures that are not zero and not a per-CPU or per-device part of a
  // whole shown beside it; those are named in one folded line per group.
  const rows = [], folded = [];
  for (const [group, entries] of groups) {
    const shown = [], zero = [], parts = [];
    for (const e of entries) {
      const [p, v] = e;
      if (p.length >= 3 && /^[0-9]+$/.test(String(p[2]))) parts.push(e);
      else if (v === 0 && p.length > 1 || v === 0 && !PM.own(PM.kRunNames, String(p[0]))) zero.push(e);
      else shown.push(e);
    }
    if (!entries.length) continue;
    rows.push({ attrs: {}, cells: [PM.el('strong', { text: group }), ''] });
    for (const [p, v] of shown) PM.summaryRow(rows, p, v);
    if (zero.length) {
      const names = [...new Set(zero.map(([p]) => PM.summaryName(p)))];
      rows.push({ cells: [PM.el('td', { class: 'zero', text: `zero: ${names.slice(0, 8).join('; ')}${names.length > 8 ? `; … (${names.length})` : ''}`, title: names.join('\n') }), ''] });
    }
    for (const e of parts) folded.push(e);
  }
  if (!rows.length) return;
  main.append(PM.el('h2', { text: 'Summary' }), PM.table('grid', null, rows, 'summary-table'));
  if (folded.length) {
    const inner = [];
    for (const [p, v] of folded) PM.summaryRow(inner, p, v);
    main.append(PM.el('details', { class: 'unchanged' }, PM.el('summary', { text: `per CPU and per device: ${folded.length} figures` }), PM.table('grid', null, inner, 'summary-parts')));
  }
};
PM.summaryRow = function (rows, p, v) {
  const unit = PM.unitOf(p);
  let text;
  // Identifiers and statuses as written (a PID is not 6,557); durations as durations.
  if (['pid', 'exit_code', 'signal'].includes(String(p[0])) && typeof v === 'number') text = String(v);
  else if (p[0] === 'duration_s' && typeof v === 'number') text = PM.seconds(v);
  else if (PM.isHistogram(v)) {
    const count = v.count ?? v.buckets.reduce((s, b) => s + b, 0);
    text = `${PM.num(count)} values` + (count && typeof v.sum === 'number' ? `, mean ${PM.fmt(v.sum / count, unit, true)}` : '') +
      ['p50', 'p90', 'p99'].filter(q => typeof v[q] === 'number').map(q => `, ${q} < ${PM.fmt(v[q], unit, true)}`).join('');
  } else {
    text = PM.fmt(v, unit, true);
  }
  rows.push({ cells: [PM.el('td', { text: PM.summaryName(p), title: p.join('.') }), PM.el('td', { class: 'num', text, title: JSON.stringify(v).slice(0, 200) })] });
};
