'use strict';
// Latency heatmaps: time across, the log2 buckets as recorded up the side, colour for how many
// values fell in each bucket in each interval. Any bucket with a value is coloured (the palest
// shade is well above white), so a rare mode stays visible beside a common one; colour can
// follow the count (linear) or its logarithm, normalised over the whole chart or per column.
PM.heatColour = function (t) {
  const stops = [[255, 237, 160], [254, 178, 76], [240, 59, 32], [128, 0, 38]];
  const f = Math.min(1, Math.max(0, t)) * (stops.length - 1), i = Math.min(stops.length - 2, Math.floor(f)), r = f - i;
  return stops[i].map((a, k) => Math.round(a + (stops[i + 1][k] - a) * r));
};
PM.kHeatLeft = 70;
PM.kHeatBottom = 20;
PM.kHeatBackground = [255, 255, 255];

// rows: one array of bucket counts per interval (null where the interval has none);
// x: the elapsed seconds at the end of each interval.
PM.heatmap = function (parent, title, rows, base, unit, x, clock) {
  const n = rows.length;
  let lo = Infinity, hi = -1, total = 0;
  for (const r of rows) if (r) r.forEach((v, k) => { if (v > 0) { lo = Math.min(lo, k); hi = Math.max(hi, k); total += v; } });
  const card = PM.el('div', { class: 'card wide' }, PM.el('h3', { text: title }));
  const box = PM.el('div', { class: 'heat' });
  const canvas = PM.el('canvas'), tip = PM.el('div', { class: 'tip' });
  box.append(canvas, tip);
  card.append(box);
  if (hi < 0) {
    card.append(PM.el('p', { class: 'note', text: 'no values recorded' }));
    parent.append(card);
    return null;
  }
  lo = Math.max(0, lo - 1);
  hi = hi + 1;
  const nb = hi - lo + 1;
  const cell = Math.max(6, Math.min(14, Math.floor(300 / nb)));
  const height = nb * cell;
  card.append(PM.el('p', { class: 'note', text: `${PM.num(total)} values; buckets from ${PM.bucketLabel(base, lo, unit)} to ${PM.bucketLabel(base, hi, unit)}` }));
  parent.append(card);

  const heat = { title, canvas, lo, hi, cell, top: 4, n, base, unit, columns: 0, matrix: null, points: total };
  // The y (CSS pixels, in the canvas) of the middle of bucket k's row.
  heat.rowY = k => heat.top + (hi - k) * cell + cell / 2;
  heat.draw = function () {
    const width = Math.max(200, box.clientWidth);
    const plotW = width - PM.kHeatLeft - 8;
    const cols = Math.max(1, Math.min(n, Math.floor(plotW)));
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round((height + heat.top + PM.kHeatBottom) * dpr);
    canvas.style.height = height + heat.top + PM.kHeatBottom + 'px';
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#f7f9fc';
    ctx.fillRect(0, 0, width, height + heat.top + PM.kHeatBottom);
    ctx.fillStyle = `rgb(${PM.kHeatBackground})`;
    ctx.fillRect(PM.kHeatLeft, heat.top, plotW, height);
    // Sum the intervals that share a pixel column.
    const m = Array.from({ length: cols }, () => new Float64Array(nb));
    for (let c = 0; c < cols; c++) {
      const a = Math.floor(c * n / cols), b = Math.max(a + 1, Math.floor((c + 1) * n / cols));
      for (let i = a; i < b; i++) {
        const r = rows[i];
        if (r) for (let k = lo; k <= hi && k < r.length; k++) m[c][k - lo] += r[k];
      }
    }
    let max = 0;
    for (const col of m) for (const v of col) max = Math.max(max, v);
    const log = PM.heatOptions.scale === 'log';
    const cw = plotW / cols;
    for (let c = 0; c < cols; c++) {
      const colMax = PM.heatOptions.norm === 'column' ? Math.max(...m[c]) : max;
      for (let k = 0; k < nb; k++) {
        const v = m[c][k];
        if (v <= 0) continue;
        const t = log ? Math.log1p(v) / Math.log1p(colMax) : v / colMax;
        ctx.fillStyle = `rgb(${PM.heatColour(0.12 + 0.88 * t)})`;
        const x0 = Math.round(PM.kHeatLeft + c * cw);  // whole pixels: no seams between columns
        ctx.fillRect(x0, heat.top + (nb - 1 - k) * cell, Math.round(PM.kHeatLeft + (c + 1) * cw) - x0, cell);
      }
    }
    // Axes: bucket bounds on the left, elapsed time below.
    ctx.fillStyle = '#5b6473';
    ctx.font = '11px system-ui, "DejaVu Sans", sans-serif';
    ctx.textBaseline = 'middle';
    ctx.textAlign = 'right';
    const every = Math.max(1, Math.ceil(14 / cell));
    for (let k = lo; k <= hi; k += every) ctx.fillText(PM.bucketLabel(base, k, unit), PM.kHeatLeft - 6, heat.rowY(k));
    ctx.textAlign = 'center';
    ctx.textBaseline = 'top';
    PM.timeTicks(ctx, x[n - 1] || n, PM.kHeatLeft, plotW, width, heat.top + height + 4);
    heat.columns = cols;
    heat.matrix = m;
    heat.plotW = plotW;
  };
  canvas.addEventListener('mousemove', ev => {
    const rect = canvas.getBoundingClientRect();
    const px = ev.clientX - rect.left - PM.kHeatLeft, py = ev.clientY - rect.top - heat.top;
    if (px < 0 || px >= heat.plotW || py < 0 || py >= height) { tip.style.display = 'none'; return; }
    const c = Math.floor(px / (heat.plotW / heat.columns)), k = hi - Math.floor(py / cell);
    const a = Math.floor(c * n / heat.columns), b = Math.max(a + 1, Math.floor((c + 1) * n / heat.columns));
    const v = heat.matrix[c][k - lo], colSum = heat.matrix[c].reduce((s, y) => s + y, 0);
    const from = a ? x[a - 1] : 0;
    tip.textContent = `${PM.elapsed(from)}–${PM.elapsed(x[b - 1])}${clock ? ' (' + clock(x[b - 1]) + ')' : ''}: ` +
      `${k ? PM.fmt(base * 2 ** (k - 1), unit) : '0'} to ${PM.fmt(base * 2 ** k, unit)}: ${PM.num(v)}` +
      (colSum ? ` (${(100 * v / colSum).toPrecision(3)} % of the column)` : '');
    tip.style.display = 'block';
    tip.style.left = Math.min(px + PM.kHeatLeft + 12, rect.width - tip.offsetWidth - 4) + 'px';
    tip.style.top = (py + heat.top + 12) + 'px';
  });
  canvas.addEventListener('mouseleave', () => { tip.style.display = 'none'; });
  heat.draw();
  let lastWidth = box.clientWidth;
  new ResizeObserver(() => { if (box.clientWidth !== lastWidth) { lastWidth = box.clientWidth; heat.draw(); } }).observe(box);
  PM.heatmaps.push(heat);
  PM.register('heatmap', title, canvas, total, { heat });
  return heat;
};
// Elapsed-time labels under a canvas plot of plotW pixels starting at left.
PM.timeTicks = function (ctx, end, left, plotW, width, y) {
  const step = PM.timeStep(end, Math.min(8, Math.max(2, Math.floor(plotW / 90))));
  for (let t = 0; t <= end + 1e-9; t += step) {
    ctx.fillText(PM.elapsed(t), Math.min(width - 20, Math.max(left + 12, left + plotW * t / end)), y);
  }
};
PM.heatControls = function (parent) {
  const sel = (label, key, options) => {
    const s = PM.el('select');
    for (const [v, t] of options) s.append(PM.el('option', { value: v, text: t }));
    s.value = PM.heatOptions[key];
    s.addEventListener('change', () => { PM.heatOptions[key] = s.value; for (const h of PM.heatmaps) h.draw(); });
    return PM.el('label', {}, label + ' ', s);
  };
  parent.append(PM.el('div', { class: 'controls' },
    sel('colour by', 'scale', [['log', 'log of the count'], ['linear', 'count']]),
    sel('normalise', 'norm', [['global', 'over the whole chart'], ['column', 'per column (each interval)']])));
};
