'use strict';
// The comparison page: the same table as `--format text` (what changed first, the unchanged
// figures folded into a section that opens; --all opens it), and the summary histograms of both
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
  // Values as the text form writes them (compare.cpp, format_value): in their units, three
  // digits, never in exponent notation.
  const group = t => { const m = /^([+-]?)(\d+)(.*)$/.exec(t); return m && m[2].length >= 5 ? m[1] + m[2].replace(/\B(?=(\d{3})+(?!\d))/g, ',') + m[3] : t; };
  const fixed = v => {
    if (v === 0) return '0';
    const e = Math.floor(Math.log10(Math.abs(v)));
    let t = v.toFixed(Math.min(9, Math.max(0, 2 - e)));
    if (t.includes('.')) t = t.replace(/0+$/, '').replace(/\.$/, '');
    return t === '0' || t === '-0' ? '~0' : group(t);
  };
  const si = (v, u) => {
    const a = Math.abs(v);
    if (a === 0) return '0 ' + u;
    for (const [d, p] of [[1e12, 'T'], [1e9, 'G'], [1e6, 'M'], [1e3, 'k'], [1, ''], [1e-3, 'm'], [1e-6, 'µ'], [1e-9, 'n']]) {
      if (a >= d * 0.9995 || d === 1e-9) return `${fixed(v / d)} ${p}${u}`;
    }
    return `${fixed(v)} ${u}`;
  };
  const value = (v, unit) => {
    if (typeof v !== 'number' || !Number.isFinite(v)) return '–';
    const a = Math.abs(v);
    switch (unit) {
      case 'bytes': {
        const names = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
        let i = 0, x = v, y = a;
        while (y >= 1023.5 && i + 1 < names.length) { x /= 1024; y /= 1024; i++; }
        return (i === 0 ? group(x.toFixed(0)) : fixed(x)) + ' ' + names[i];
      }
      case 'seconds':
        if (a === 0) return '0 s';
        if (a < 0.9995e-6) return fixed(v * 1e9) + ' ns';
        if (a < 0.9995e-3) return fixed(v * 1e6) + ' µs';
        if (a < 0.9995) return fixed(v * 1e3) + ' ms';
        return fixed(v) + ' s';
      case 'percent': return fixed(v) + ' %';
      case 'celsius': return fixed(v) + ' °C';
      case 'joules': return si(v, 'J');
      case 'watts': return si(v, 'W');
      default: return Number.isInteger(v) || a >= 1000 ? group(v.toFixed(0)) : fixed(v);
    }
  };
  const signed = (v, unit) => (v >= 0 ? '+' : '') + value(v, unit);
  const pct = v => v === null || v === undefined || !Number.isFinite(v) ? '' : Math.abs(v) < 999.95 ? (v >= 0 ? '+' : '') + v.toFixed(1) + ' %' : group((v >= 0 ? '+' : '') + v.toFixed(0)) + ' %';
  const pText = p => p < 1e-4 ? '<0.0001' : p.toFixed(4);
  const rowOf = f => {
    const s = f.shift;
    let shift = '';
    if (s) {
      shift = s.percent !== null ? pct(s.percent) : signed(s.estimate, f.unit);
      if ('low' in s) shift += s.percent !== null ? ` [${pct(s.low_percent)}, ${pct(s.high_percent)}]` : ` [${value(s.low, f.unit)}, ${value(s.high, f.unit)}]`;
    }
    const cls = f.significant ? (f.worse ? 'worse' : 'better') : 'none';
    const verdict = PM.el('span', { class: 'badge ' + cls, text: f.verdict + (f.significant ? (f.worse ? ' (worse)' : ' (better)') : '') });
    const num = t => PM.el('td', { class: 'num', text: t });
    const runs = v => v.map(x => value(x, f.unit)).join(', ');
    return { attrs: f.significant ? { class: f.worse ? 'sig-worse' : 'sig-better' } : {}, cells: [f.figure,
      num(f.base.length ? value(f.base_median, f.unit) : '–'), num(f.new.length ? value(f.new_median, f.unit) : '–'),
      num(pct(f.change_percent)), num(shift), num('p' in f ? pText(f.p) : ''), num('p_adjusted' in f ? pText(f.p_adjusted) : ''), verdict,
      PM.el('td', { class: 'num', text: `${f.base.length} / ${f.new.length}`, title: `base: ${runs(f.base)}\nnew: ${runs(f.new)}` })] };
  };
  const head = ['figure', { class: 'num', text: 'base (median)' }, { class: 'num', text: 'new (median)' }, { class: 'num', text: 'change' },
    { class: 'num', text: 'shift [CI]' }, { class: 'num', text: 'p' }, { class: 'num', text: 'p adj' }, 'verdict', { class: 'num', text: 'runs' }];
  // What changed leads, in the order of the data (the command's own figures first, then by
  // significance and effect); the folded figures, in the same order, in a section that opens.
  const leading = c.figures.filter(f => !f.folded), folded = c.figures.filter(f => f.folded);
  const sig = c.figures.filter(f => f.significant);
  main.append(PM.el('h2', { text: `Figures (${sig.length} of ${c.tested} differ significantly)` }));
  if (leading.length) main.append(PM.table('grid', head, leading.map(rowOf), 'comparison-table'));
  else main.append(PM.el('p', { text: 'No figure changed significantly.' }));
  if (folded.length) {
    const count = new Map();
    for (const f of folded) count.set(f.verdict, (count.get(f.verdict) || 0) + 1);
    const why = [...count].map(([v, n]) => `${n} ${v}`);
    const details = PM.el('details', { class: 'unchanged', id: 'folded-figures' },
      PM.el('summary', { text: `unchanged: ${folded.length} figure${folded.length === 1 ? '' : 's'} (${why.join(', ')})` }),
      PM.table('grid', head, folded.map(rowOf), 'folded-table'));
    details.open = !!c.all;
    main.append(details);
  }
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
