// SPDX-License-Identifier: Apache-2.0
// A test receiver of OTLP/HTTP traces that decodes every request with OpenTelemetry's own
// generated protobuf code (@opentelemetry/otlp-transformer's), and writes each span it decoded
// as a JSON line:
//   node otlp_receiver.js NODE_MODULES PORT_FILE OUT_FILE
// It listens on a port of the kernel's choice (written to PORT_FILE once listening) and answers
// every request 200 with an empty ExportTraceServiceResponse.
'use strict';
const [modules, portFile, outFile] = process.argv.slice(2);
const root = require(modules + '/@opentelemetry/otlp-transformer/build/src/generated/root');
const trace = root.opentelemetry.proto.collector.trace.v1;
const http = require('http');
const zlib = require('zlib');
const fs = require('fs');

const hex = (b) => Buffer.from(b || []).toString('hex');
const value = (v) => {
  if (v.stringValue !== undefined && v.stringValue !== null && v.stringValue !== '') return v.stringValue;
  if (v.intValue !== undefined && v.intValue !== null) return Number(v.intValue.toString());
  if (v.doubleValue !== undefined && v.doubleValue !== null) return v.doubleValue;
  if (v.boolValue !== undefined && v.boolValue !== null) return v.boolValue;
  return null;
};

// Each data point of a metrics request as a JSON line in OUT_FILE.metrics.
const metrics = root.opentelemetry.proto.collector.metrics.v1;
const num = (x) => (x === undefined || x === null ? null : Number(x.toString()));
function metricsRequest(body) {
  const msg = metrics.ExportMetricsServiceRequest.decode(body);
  let lines = '';
  for (const rm of msg.resourceMetrics) {
    for (const sm of rm.scopeMetrics) {
      for (const m of sm.metrics) {
        const kind = m.sum ? 'sum' : m.gauge ? 'gauge' : m.exponentialHistogram ? 'exponential_histogram' : 'other';
        const data = m.sum || m.gauge || m.exponentialHistogram || { dataPoints: [] };
        for (const p of data.dataPoints) {
          const attrs = {};
          for (const a of p.attributes) attrs[a.key] = value(a.value);
          const point = { name: m.name, unit: m.unit, kind, attrs, time: p.timeUnixNano.toString(), start: p.startTimeUnixNano.toString() };
          if (kind === 'sum') Object.assign(point, { value: p.asDouble, monotonic: m.sum.isMonotonic, temporality: m.sum.aggregationTemporality });
          if (kind === 'gauge') point.value = p.asDouble;
          if (kind === 'exponential_histogram') {
            Object.assign(point, { count: num(p.count), sum: p.sum, scale: p.scale, zeroCount: num(p.zeroCount),
              zeroThreshold: p.zeroThreshold, offset: p.positive ? p.positive.offset : 0,
              bucketCounts: p.positive ? p.positive.bucketCounts.map(num) : [], temporality: m.exponentialHistogram.aggregationTemporality });
          }
          lines += JSON.stringify(point) + '\n';
        }
      }
    }
  }
  fs.appendFileSync(outFile + '.metrics', lines);
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body = Buffer.concat(chunks);
    if (req.headers['content-encoding'] === 'gzip') body = zlib.gunzipSync(body);
    if (req.url === '/v1/metrics') {
      metricsRequest(body);
      res.writeHead(200, { 'Content-Type': 'application/x-protobuf' });
      res.end(Buffer.from(metrics.ExportMetricsServiceResponse.encode({}).finish()));
      return;
    }
    const msg = trace.ExportTraceServiceRequest.decode(body);
    let lines = '';
    for (const rs of msg.resourceSpans) {
      const resource = {};
      for (const a of rs.resource.attributes) resource[a.key] = value(a.value);
      for (const ss of rs.scopeSpans) {
        for (const s of ss.spans) {
          const attrs = {};
          for (const a of s.attributes) attrs[a.key] = value(a.value);
          lines += JSON.stringify({
            traceId: hex(s.traceId), spanId: hex(s.spanId), parentSpanId: hex(s.parentSpanId), name: s.name,
            kind: s.kind, start: s.startTimeUnixNano.toString(), end: s.endTimeUnixNano.toString(), attrs, resource,
            scope: ss.scope.name, contentType: req.headers['content-type'], encoding: req.headers['content-encoding'] || '',
          }) + '\n';
        }
      }
    }
    fs.appendFileSync(outFile, lines);
    res.writeHead(200, { 'Content-Type': 'application/x-protobuf' });
    res.end(Buffer.from(trace.ExportTraceServiceResponse.encode({}).finish()));
  });
});
server.listen(0, '127.0.0.1', () => fs.writeFileSync(portFile, String(server.address().port)));
