// SPDX-License-Identifier: Apache-2.0
// gzip (zlib, RFC 1952): OTLP bodies with OTEL_EXPORTER_OTLP_COMPRESSION=gzip, pprof files.
#pragma once

#include <string>

namespace pm {

// The bytes gzipped; empty when zlib fails (out of memory).
std::string gzip(const std::string& in);

}  // namespace pm
