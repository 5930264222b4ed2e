// SPDX-License-Identifier: Apache-2.0
// Reads a pprof file (gzipped profile.proto) with the npm registry's pprof-format decoder, not
// perf-monitor's own code, and prints what a reader sees as JSON: the sample types, each value's
// total, the period, and every sample's stack (frame names, root first, and each one's
// "file:line" or '') with its values.
//   node pprof_reader.js NODE_MODULES FILE
'use strict';
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const { Profile } = require(path.join(process.argv[2], 'pprof-format'));

const p = Profile.decode(zlib.gunzipSync(fs.readFileSync(process.argv[3])));
const str = (i) => p.stringTable.strings[Number(i)];
const fn = new Map(p.function.map((f) => [Number(f.id), { name: str(f.name), file: str(f.filename) }]));
// each location's lines: a frame's name, and "file:line" ('' where the profile has none)
const loc = new Map(p.location.map((l) => [Number(l.id), l.line.map((ln) => {
  const f = fn.get(Number(ln.functionId));
  return { name: f.name, where: f.file && Number(ln.line) ? `${f.file}:${Number(ln.line)}` : '' };
})]));
const types = p.sampleType.map((t) => `${str(t.type)}/${str(t.unit)}`);
const totals = types.map(() => 0);
const samples = p.sample.map((s) => {
  const values = s.value.map(Number);
  values.forEach((v, i) => { totals[i] += v; });
  // location ids are leaf first; a location's lines are innermost first
  const frames = [];
  const lines = [];
  for (const id of s.locationId.map(Number).reverse()) {
    for (const l of loc.get(id).slice().reverse()) {
      frames.push(l.name);
      lines.push(l.where);
    }
  }
  return { frames, lines, values };
});
process.stdout.write(JSON.stringify({
  types, totals, samples,
  period: Number(p.period),
  period_type: p.periodType ? `${str(p.periodType.type)}/${str(p.periodType.unit)}` : '',
  duration_nanos: Number(p.durationNanos),
}) + '\n');
