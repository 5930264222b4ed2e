'use strict';
// The comparison page: the same table as `--format text`, and the summary histograms of both
// sides overlaid (each side's runs summed, shown as shares so unequal run counts compare).
PM.renderCompare = function (c, main) {
  main.append(PM.el('h2', { text: 'Runs' }), PM.table('kv', null, [
    { cells: [PM.el('th', { text: 'base' }), c.base.join(' ')] },
    { cells: [PM.el('th', { text: 'new' }), c.new.join(' ')] },
    { cells: [PM.el('th', { text: 'test' }), `${c.test}, ${c.correction} over ${c.tested} figures, alpha ${c.alpha}, minimum effect ${c.min_effect_percent} %`] },
  ]));
  if (c.warnings.length) main.append(PM.el('div', { class: 'warnings', id: 'warnings' }, PM.el('ul', {}, ...c.warnings.map(w => PM.el('li', { text: w })))));
  if (c.fail_on.length) {
    main.append(PM.el('p', { text: c.regressions.length ? `Regression (--fail-on ${c.fail_on.join(' ')}): ${c.regressions.join(', ')}` : `No regression among the --fail-on figures (${c.fail_on.join(' ')}).` }));
  }
  const pct = v => v === null || v === undefined ? '' : (v >= 0 ? '+' : '') + v.toFixed(1) + ' %';
  const rows = c.figures.map(f => {
    const s = f.shift;
    let shift = '';
    if (s) {
      shift = s.percent !== null ? pct(s.percent) : PM.fmt(s.estimate, f.unit);
      if ('low' in s) shift += s.percent !== null ? ` [${pct(s.low_percent)}, ${pct(s.high_percent)}]` : ` [${PM.fmt(s.low, f.unit)}, ${PM.fmt(s.high, f.unit)}]`;
    }
    const cls = f.significant ? (f.worse ? 'worse' : 'better') : 'none';
    const verdict = PM.el('span', { class: 'badge ' + cls, text: f.verdict + (f.significant ? (f.worse ? ' (worse)' : ' (better)') : '') });
    const num = t => PM.el('td', { class: 'num', text: t });
    return { attrs: f.significant ? { class: f.worse ? 'sig-worse' : 'sig-better' } : {}, cells: [f.figure,
      num(f.base.length ? PM.fmt(f.base_median, f.unit, true) : '–'), num(f.new.length ? PM.fmt(f.new_median, f.unit, true) : '–'),
      num(pct(f.change_percent)), num(shift), num('p' in f ? f.p.toPrecision(3) : ''), num('p_adjusted' in f ? f.p_adjusted.toPrecision(3) : ''), verdict,
      PM.el('td', { class: 'num', text: `${f.base.length} / ${f.new.length}`, title: `base: ${f.base.join(', ')}\nnew: ${f.new.join(', ')}` })] };
  });
  const head = ['figure', { class: 'num', text: 'base (median)' }, { class: 'num', text: 'new (median)' }, { class: 'num', text: 'change' },
    { class: 'num', text: 'shift [CI]' }, { class: 'num', text: 'p' }, { class: 'num', text: 'p adj' }, 'verdict', { class: 'num', text: 'runs' }];
  const t = PM.el('table', { class: 'grid', id: 'comparison-table' });
  t.append(PM.el('tr', {}, ...head.map(h => PM.el('th', typeof h === 'string' ? { text: h } : h))));
  for (const r of rows) t.append(PM.el('tr', r.attrs, ...r.cells.map(x => x instanceof HTMLElement && x.tagName === 'TD' ? x : PM.el('td', {}, x))));
  const sig = c.figures.filter(f => f.significant);
  main.append(PM.el('h2', { text: `Figures (${sig.length} of ${c.tested} differ significantly)` }), t);
  if (c.histograms.length) {
    const cards = PM.el('div', { class: 'cards' });
    main.append(PM.el('h2', { text: 'Distributions, base and new overlaid' }), cards);
    for (const h of c.histograms) {
      const share = v => { const s = v.reduce((a, b) => a + b, 0); return v.map(x => s ? x / s : 0); };
      const base = share(h.base), next = share(h.new);
      const len = Math.max(base.length, next.length);
      let lo = 0, hi = len - 1;
      while (lo < hi && !(base[lo] > 0) && !(next[lo] > 0)) lo++;
      while (hi > lo && !(base[hi] > 0) && !(next[hi] > 0)) hi--;
      const labels = [];
      for (let k = lo; k <= hi; k++) labels.push(PM.bucketLabel(h.bucket_base, k, h.unit));
      const pick = v => labels.map((_, i) => 100 * (v[lo + i] || 0));
      PM.barChart(PM.card(cards, h.path), h.path, labels, [{ label: 'base', values: pick(base), colour: '#4e79a7' }, { label: 'new', values: pick(next), colour: '#e15759' }], 'percent', { alpha: '88' });
    }
  }
};
