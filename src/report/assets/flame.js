'use strict';
// Flame graphs of the run's stacks (--stacks): the summary's `stacks`, on-CPU and off-CPU, each
// an icicle (the thread's name on top, callees below), a frame's width its share of the total.
// The summary lists the heaviest stacks; the rest of the total is one "(other stacks)" box.
// Searchable: the frames whose name holds the text are marked, and the share of the total under
// them is said. Frames are data (another user's symbol names): set as text, never as markup.
PM.kFlameRowPx = 17;
PM.kFlameMinShare = 0.002;  // a frame narrower than this is not drawn (its time stays in its parent's)

PM.flameTree = function (stacks, valueOf, total) {
  const root = { name: 'all', value: 0, children: new Map() };
  for (const s of stacks) {
    const v = Number(valueOf(s)) || 0;
    if (v <= 0 || !Array.isArray(s.frames)) continue;
    root.value += v;
    let node = root;
    for (const f of s.frames.slice(0, 256)) {
      const name = String(f);
      let child = node.children.get(name);
      if (!child) { child = { name, value: 0, children: new Map() }; node.children.set(name, child); }
      child.value += v;
      node = child;
    }
  }
  if (total > root.value) {
    root.children.set('(other stacks)', { name: '(other stacks)', value: total - root.value, children: new Map(), other: true });
    root.value = total;
  }
  return root;
};

PM.renderFlame = function (parent, title, root, fmtValue, note) {
  const card = PM.el('div', { class: 'card wide flame-card' }, PM.el('h3', { text: title }));
  const search = PM.el('input', { value: '' });
  search.placeholder = 'search frames';
  const said = PM.el('span', { class: 'flame-said', text: '' });
  card.append(PM.el('div', { class: 'controls' }, search, said));
  const box = PM.el('div', { class: 'flame' });
  card.append(box);
  if (note) card.append(PM.el('p', { class: 'note', text: note }));
  parent.append(card);
  const drawn = [];
  let depth = 0;
  const draw = (node, left, level) => {
    const share = node.value / root.value;
    if (share < PM.kFlameMinShare) return;
    const e = PM.el('div', { class: 'frame' + (node.name.endsWith('_[k]') ? ' kernel' : '') + (node.other ? ' other' : ''),
      title: `${node.name}\n${fmtValue(node.value)} (${(100 * share).toFixed(1)} %)`, text: node.name });
    e.style.left = (100 * left) + '%';
    e.style.width = (100 * share) + '%';
    e.style.top = (level * PM.kFlameRowPx) + 'px';
    box.append(e);
    drawn.push({ e, node });
    depth = Math.max(depth, level + 1);
    let at = left;
    for (const c of [...node.children.values()].sort((a, b) => b.value - a.value)) {
      draw(c, at, level + 1);
      at += c.value / root.value;
    }
  };
  draw(root, 0, 0);
  box.style.height = (depth * PM.kFlameRowPx + 2) + 'px';
  // The share under the frames that match, each counted once (not again under a matching caller).
  const match = () => {
    const q = search.value.trim().toLowerCase();
    let sum = 0;
    const walk = (node, counted) => {
      const hit = q !== '' && node.name.toLowerCase().includes(q);
      if (hit && !counted) sum += node.value;
      for (const c of node.children.values()) walk(c, counted || hit);
    };
    walk(root, false);
    for (const d of drawn) d.e.classList.toggle('match', q !== '' && d.node.name.toLowerCase().includes(q));
    said.textContent = q === '' ? '' : ` matched: ${fmtValue(sum)}, ${(100 * sum / root.value).toFixed(1)} % of the total`;
  };
  search.addEventListener('input', match);
  return { box, search, match };
};

PM.renderStacks = function (main, summary) {
  const st = PM.object(summary.stacks);
  const on = PM.object(st.on_cpu), off = PM.object(st.off_cpu);
  const hasOn = Array.isArray(on.stacks) && on.stacks.length, hasOff = Array.isArray(off.stacks) && off.stacks.length;
  if (!hasOn && !hasOff) return;
  main.append(PM.el('h2', { text: 'Where it ran and where it waited', id: 'section-stacks' }));
  PM.flames = {};
  if (hasOn) {
    const period = Number(on.period_ns) || 0;
    const fmt = v => `${v} samples` + (period ? ` (${PM.fmt(v * period * 1e-9, 'seconds', true)} of CPU)` : '');
    PM.flames.on_cpu = PM.renderFlame(main, `On-CPU stacks: ${fmt(Number(on.samples) || 0)}`, PM.flameTree(on.stacks, s => s.samples, Number(on.samples) || 0), fmt,
      `The ${on.stacks.length} heaviest of ${on.distinct ?? on.stacks.length} stacks; every stack is in --stacks-out's file.`);
  }
  if (hasOff) {
    const fmt = v => PM.fmt(v * 1e-9, 'seconds', true);
    PM.flames.off_cpu = PM.renderFlame(main, `Off-CPU stacks: ${fmt(Number(off.ns) || 0)} off the CPU`, PM.flameTree(off.stacks, s => s.ns, Number(off.ns) || 0), fmt,
      `The ${off.stacks.length} heaviest of ${off.distinct ?? off.stacks.length} stacks; every stack is in --off-stacks-out's file.`);
  }
};

// Under the slowest requests: where each one's thread was off the CPU longest.
PM.renderBlockedStacks = function (parent, slow) {
  const rows = slow.filter(s => s && typeof s === 'object' && s.blocked_stack && Array.isArray(s.blocked_stack.frames));
  if (!rows.length) return;
  const list = PM.el('div', { class: 'card wide blocked' }, PM.el('h3', { text: 'Where each slow request was off the CPU longest' }));
  for (const s of rows) {
    const frames = s.blocked_stack.frames.map(String);
    // each frame's "file:line" where the recording has it (null where DWARF had none)
    const lines = Array.isArray(s.blocked_stack.lines) ? s.blocked_stack.lines : [];
    const user = frames.map((f, i) => (typeof lines[i] === 'string' && lines[i] ? `${f}  (${lines[i]})` : f))
      .slice(1).filter(f => !f.endsWith('_[k]')).reverse();
    const kernel = frames.filter(f => f.endsWith('_[k]'));
    const head = `request ${s.request_id ?? '?'}` + (s.function ? ` (${s.function})` : '') + `: ${PM.fmt(Number(s.blocked_stack.off_cpu_s) || 0, 'seconds', true)} of ${PM.fmt(Number(s.latency_s) || 0, 'seconds', true)}`;
    list.append(PM.el('p', { class: 'blocked-head', text: head }),
      PM.el('pre', { class: 'blocked-stack', text: user.join('\n') + (kernel.length ? `\n  in the kernel: ${kernel.slice().reverse().map(k => k.slice(0, -4)).join(' <- ')}` : '') }));
  }
  parent.append(list);
};
