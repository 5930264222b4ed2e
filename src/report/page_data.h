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

#include <string>
#include <vector>

#include "report/recording.h"

namespace pm::report {

// The columns of one SeriesTable as JSON text (the "series" array above).
std::string series_json(const SeriesTable& table);
// The whole uncompressed JSON of a report page.
std::string report_json(const Recording& rec);
// gzip (RFC 1952) then base64: what the page's DecompressionStream("gzip") reads back.
std::string gzip_base64(const std::string& text);

}  // namespace pm::report
