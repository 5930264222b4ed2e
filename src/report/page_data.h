// SPDX-License-Identifier: Apache-2.0
// The data a report page carries: the recording as columns, compact, then gzip and base64 so
// that an hour at one second stays a few megabytes. The page (assets/report.js) decodes it.
//
// Layout of the JSON before compression (format 2: sparse, so that a path in a few of many
// records costs its cells, not the records):
//   {"format":2, "kind":"report", "file":..., "generator":..., "warnings":[...],
//    "header":{...}|null, "summary":{...}|null,
//    "intervals":{"n":N, "series":[S...]},
//    "spans":{"seen":N, "kept":{"n":K, "series":[S...]}, "totals":{function:{"count":n,"sums":{field:x}}}}}
//   S, a value series:   {"p":[path...], "c":v}               the same v in every record
//                     or {"p":[path...], "v":[cells], "a":[[from,to],...]}
//                        the cells of the records that have this path, in record order; "a"
//                        lists the ranges [from, to) of records without it
//   S, a histogram:      {"p":[path...], "h":1, "f":[S per scalar field], "b":[rows], "bl":L or
//                         "bls":[L per row], "a":[[from,to],...]}
//                        rows (and "bls") of the records that have it, in record order
//                        row: 0 when every bucket is zero, else [offset, c_offset, ...] up to
//                        the last non-zero bucket; the rest are zeros up to the length L
#pragma once

#include <zlib.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "report/recording.h"

namespace pm::report {

// Where text goes, a piece at a time.
using Sink = std::function<void(std::string_view)>;

// The columns of one SeriesTable as JSON text (the "series" array above).
std::string series_json(const SeriesTable& table);
// The whole uncompressed JSON of a report page, written to `out` in pieces as it is made: it
// is never held whole (an hour at one second makes tens of MiB of it).
void write_report_json(const Recording& rec, const Sink& out);
std::string report_json(const Recording& rec);

// gzip (RFC 1952) then base64 of the text written to it, passed on to `out` as it goes: what
// the page's DecompressionStream("gzip") reads back.
class GzipBase64 {
 public:
  explicit GzipBase64(Sink out);
  ~GzipBase64();
  GzipBase64(const GzipBase64&) = delete;
  GzipBase64& operator=(const GzipBase64&) = delete;
  void write(std::string_view text);
  void finish();  // the end of the text: writes what is left

 private:
  void deflate_some(std::string_view text, int flush);
  void encode(std::string_view bytes, bool last);
  Sink out_;
  z_stream zs_{};
  bool ok_ = false;
  std::string gz_;    // compressed bytes not yet encoded (fewer than 3 between calls)
  std::string text_;  // base64 not yet passed on
};
std::string gzip_base64(const std::string& text);

}  // namespace pm::report
